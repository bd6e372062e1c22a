package reveal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsers(t *testing.T) {
	tests := map[string]struct {
		parse func([]byte) ([]string, error)
		in    string
		want  []string
	}{
		"go.mod":       {GoMod, "module x\n\nreplace example.com/shared => ../shared\nreplace (\n\texample.com/a v1.0.0 => ../a // local\n\texample.com/b => example.com/c v1.2.0\n)\n", []string{"../shared", "../a"}},
		"Cargo.toml":   {CargoToml, "[package]\nname = \"x\"\npath = \"ignored\"\n[dependencies]\nshared = { path = \"../shared\" }\nserde = \"1\"\n[target.'cfg(unix)'.dev-dependencies]\nu = { path = \"../unix-only\" }\n[patch.crates-io]\nfoo = { path = \"../foo\" }\n", []string{"../shared", "../foo", "../unix-only"}},
		"package.json": {PackageJSON, `{"dependencies":{"ui":"file:../ui","react":"^18"},"devDependencies":{"t":"link:../tools"}}`, []string{"../ui", "../tools"}},
		"csproj":       {CSProj, `<Project Sdk="Microsoft.NET.Sdk"><ItemGroup><ProjectReference Include="..\Shared\Shared.csproj" /><PackageReference Include="X" /></ItemGroup></Project>`, []string{"../Shared"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	root := t.TempDir()
	folder := filepath.Join(root, "proj")
	w := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(s), 0o644)
	}
	w(filepath.Join(folder, "go.mod"), "module x\nreplace y => ../shared\nreplace z => ./inside\n")
	w(filepath.Join(folder, "web", "package.json"), `{"dependencies":{"ui":"file:../../ui"}}`)
	w(filepath.Join(folder, "node_modules", "p", "package.json"), `{"dependencies":{"no":"file:../../../../never"}}`)
	w(filepath.Join(folder, "bad", "Cargo.toml"), "[[[")
	got, errs := Suggest(folder)
	want := []Suggestion{
		{Path: filepath.Join(root, "shared"), Rel: "../shared", Manifest: "go.mod"},
		{Path: filepath.Join(root, "ui"), Rel: "../ui", Manifest: "web/package.json"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if len(errs) != 1 {
		t.Fatalf("errs = %v, want the bad Cargo.toml", errs)
	}
}

func FuzzGoMod(f *testing.F) {
	f.Add([]byte("replace a => ../b\n"))
	f.Fuzz(func(t *testing.T, b []byte) { GoMod(b) })
}

func FuzzCargoToml(f *testing.F) {
	f.Add([]byte("[dependencies]\na = { path = \"../a\" }\n"))
	f.Fuzz(func(t *testing.T, b []byte) { CargoToml(b) })
}

func FuzzPackageJSON(f *testing.F) {
	f.Add([]byte(`{"dependencies":{"a":"file:../a"}}`))
	f.Fuzz(func(t *testing.T, b []byte) { PackageJSON(b) })
}

func FuzzCSProj(f *testing.F) {
	f.Add([]byte(`<Project><ProjectReference Include="..\a\a.csproj"/></Project>`))
	f.Fuzz(func(t *testing.T, b []byte) { CSProj(b) })
}
