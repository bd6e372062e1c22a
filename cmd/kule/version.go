package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at link time by make build and make dist
// (-ldflags "-X main.version=… -X main.commit=…"); a plain go build or go
// install leaves them empty and currentVersion reads what the go command
// stamped into the binary instead.
var (
	version string
	commit  string
)

// versionInfo is what kule --version and kule version --json say.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"` // built from a work tree with uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// currentVersion is this binary's version: the linker's values where make
// set them, else the module version and VCS stamp of debug.ReadBuildInfo.
func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = v.Modified || s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// String is the line kule --version prints after "kule ":
// "0.3.0 (commit 1a2b3c4d5e6f, go1.26.8, linux/amd64)".
func (v versionInfo) String() string {
	c := v.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if v.Modified {
		c += ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s, %s)", v.Version, c, v.Go, v.Platform)
}

func versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print Kule's version, the commit it was built from and its Go version",
		Example: `  kule version
  kule version --json | jq -r .commit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "kule", v)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print {version, commit, modified, go, platform}")
	return c
}
