package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzLoad: any config.toml either fails to load with an error that names
// the file, or loads to settings that Save writes back and Load reads as the
// same settings.
func FuzzLoad(f *testing.F) {
	// Files the tests and the CLI write, and one Save writes itself.
	f.Add([]byte("[policy]\nchoice = \"careful\"\n"))
	f.Add([]byte("[limits\n"))
	f.Add([]byte("[sandbox]\naccept_weaker = true\ndevices = [\"snd\"]\nno_gpu = true\n\n[sandbox.reveal]\n\"/home/p/code/proj\" = [\"/home/p/code/shared\", \"/home/p/code/ui\"]\n"))
	f.Add([]byte("[limits]\ncpu = 1.5\nmemory = 1073741824\ndisk = 2147483648\ntime = 600000000000\nidle = 60000000000\ntask_time = 3600000000000\ngpu = \"off\"\npids = 512\n"))
	f.Add([]byte(""))
	f.Add([]byte("[[transport]]\nname = \"slack\"\nchannel = \"C0KULE\"\noperators = [\"U1\"]\nbot_secret = \"KULE_TRANSPORT_SLACK_BOT\"\napp_secret = \"KULE_TRANSPORT_SLACK_APP\"\n"))
	c := &Config{}
	c.SetTransport(TransportConfig{Name: "discord", Channel: "100", Operators: []string{"200"}, BotSecret: "KULE_TRANSPORT_DISCORD_BOT", Folder: "~/notes"})
	c.Sandbox.AcceptWeaker = true
	c.Sandbox.AddReveal("/home/p/code/proj", "/home/p/code/shared")
	c.Policy.Choice = "balanced"
	c.Limits.Time = 10 * time.Minute
	c.Limits.CPU = 2
	root := f.TempDir()
	if err := Save(root, c); err != nil {
		f.Fatal(err)
	}
	saved, err := os.ReadFile(Path(root))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)

	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		if err := os.WriteFile(Path(root), b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(root)
		if err != nil {
			if !strings.Contains(err.Error(), Path(root)) {
				t.Fatalf("error does not name the file %s: %v", Path(root), err)
			}
			if got != nil {
				t.Fatalf("Load returned settings with its error: %+v", got)
			}
			return
		}
		again := t.TempDir()
		if err := Save(again, got); err != nil {
			t.Fatalf("Save of what Load read: %v", err)
		}
		back, err := Load(again)
		if err != nil {
			saved, _ := os.ReadFile(Path(again))
			t.Fatalf("what Save wrote does not load: %v\n%s", err, saved)
		}
		if d := cmp.Diff(got, back, cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); d != "" {
			t.Fatalf("round trip changed the settings (-loaded +reloaded):\n%s", d)
		}
	})
}
