// Package sandbox runs a task's commands isolated from the person's machine.
//
// On Linux, Sandbox (a runner.Runner) starts the command through a helper —
// the kule binary itself, re-executed as `kule __sandbox` — in two stages:
//
//  1. init: PID 1 of new user, mount, PID, network, IPC and UTS namespaces.
//     It makes every mount read-only, nosuid and nodev; covers hidden paths
//     (credentials, personal folders, the workspace's parent, Kule's home
//     and the other tasks) with empty tmpfs or /dev/null; mounts the copy,
//     the task's tmp (at /tmp) and --allow-write paths writable, revealed
//     projects read-only and PATH/SDK folders readable again; gives a /dev
//     of named devices and a fresh /proc; brings up loopback and, when the
//     task has a proxy, listens on 127.0.0.1:<port> and hands each accepted
//     connection to the parent (which dials the proxy on the host). It then
//     starts stage 2, forwards signals, reaps orphans, and exits with the
//     command's code: everything left in the namespace dies with it.
//  2. exec: drops every capability, sets no_new_privs, applies a Landlock
//     ruleset (writes only to the copy, /tmp, /dev's named devices and
//     --allow-write; TCP connect only to the proxy port; abstract unix
//     sockets and signals scoped), closes every inherited descriptor but
//     stdio, starts a new session (no TIOCSTI into the person's terminal)
//     and execs the command.
//
// If a part of the sandbox cannot be set up the command does not run (fail
// closed) and the error names what is missing, unless the person accepted
// weaker isolation (`kule isolation --accept-weaker on`).
//
// On macOS the same Runner uses a Seatbelt profile (see seatbelt.go); that
// path is written but untested on a Mac.
package sandbox
