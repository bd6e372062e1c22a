package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kulehq/kule/kernel"
	"github.com/kulehq/kule/sdk/extension"
)

// extDevCommand is `kule ext dev PATH [COMMAND]`: the loop of writing an
// extension. Each time the folder changes it is packed and installed, and
// the person is asked, once for that package, whether to approve it; once
// approved, COMMAND (an id of its manifest) runs in the sandboxed host.
func extDevCommand() *cobra.Command {
	var once bool
	c := &cobra.Command{
		Use:   "dev PATH [COMMAND [ARGS...]]",
		Short: "Pack, install and run an extension from its folder, again on each change (asks approval once per change)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			k, err := openKernel()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			in := bufio.NewReader(cmd.InOrStdin())
			store := kernel.NewExtensionStore(k.Home())
			last, seen := "", ""
			for {
				if sig := folderSignature(dir); sig != seen {
					seen = sig
					sum, err := devRound(cmd, k, store, dir, args[1:], last, in, out)
					if err != nil {
						fmt.Fprintf(out, "%v\n", safeLine(err.Error()))
					}
					if sum != "" {
						last = sum
					}
				}
				if once {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(500 * time.Millisecond): // how often the folder is looked at
				}
			}
		},
	}
	c.Flags().BoolVar(&once, "once", false, "one round: pack, install, ask, run, and stop")
	return c
}

// devRound packs and installs dir when its package changed since last,
// asks for approval when the package is not approved, and runs the
// command. It returns the package's sha256.
func devRound(cmd *cobra.Command, k *kernel.Kernel, store *kernel.ExtensionStore, dir string, run []string, last string, in *bufio.Reader, out io.Writer) (string, error) {
	data, pkg, err := extension.Pack(dir)
	if err != nil {
		return "", err
	}
	id := pkg.Manifest.ID
	if pkg.SHA256 != last {
		if _, err := store.Install(data); err != nil {
			return "", err
		}
	}
	st, err := store.Status(id)
	if err != nil {
		return pkg.SHA256, err
	}
	if !st.Approved {
		printExtension(out, st)
		fmt.Fprintf(out, "approve %s %s (sha256 %s)? [y/N] ", id, pkg.Manifest.Version, pkg.SHA256)
		line, _ := in.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(out, "not approved; nothing of it ran. Change a file to try again.")
			return pkg.SHA256, nil
		}
		if _, err := store.Approve(id, pkg.SHA256); err != nil {
			return pkg.SHA256, err
		}
		fmt.Fprintf(out, "approved %s (sha256 %s)\n", id, pkg.SHA256)
	}
	if len(run) == 0 {
		return pkg.SHA256, nil
	}
	x, err := extRunner(k, k.Home(), cmd.ErrOrStderr()).Start(cmd.Context(), id)
	if err != nil {
		return pkg.SHA256, err
	}
	defer x.Close()
	a, _ := json.Marshal(append([]string{}, run[1:]...))
	v, err := x.Run(cmd.Context(), run[0], a)
	if err != nil {
		return pkg.SHA256, err
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	fmt.Fprintf(out, "%s.%s: %s\n", id, run[0], safeText(s))
	return pkg.SHA256, nil
}

// folderSignature is the names, sizes and times of dir's files: it changes
// when a file is written, added or removed.
func folderSignature(dir string) string {
	var b strings.Builder
	_ = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}
