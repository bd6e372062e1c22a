// Package sandbox runs a task's commands isolated from the person's machine.
//
// On Linux, Sandbox (a runner.Runner) starts the command through a helper —
// kule-sandbox beside the kule executable (cmd/kule-sandbox: a small static
// binary), else the kule binary itself re-executed as `kule __sandbox`. The
// helper is C (pid1_linux.c), linked into every binary of this package and
// run from a constructor before the Go runtime starts, when the arguments
// are exactly the helper's: a Go runtime's start and end cost PID 1 about a
// millisecond, more than anything else it does. A binary built without cgo
// has no helper, and refuses to run commands. The helper is PID 1 of new
// user, mount, PID, network, IPC and UTS namespaces. It makes every mount
// read-only, nosuid and nodev; covers hidden paths (kernel/internal/credentials'
// list, agents' logins but the run's own, personal folders by their XDG
// names, every project beside the workspace, /run and the named sockets
// bound on the system, Kule's home and the other tasks; see hiding.go and
// sockets.go) with empty tmpfs or /dev/null; mounts the copy, the task's tmp (at /tmp) and
// --allow-write paths writable, revealed projects read-only and PATH/SDK
// folders readable again; gives a /dev of named devices, a private devpts
// and a fresh /proc; brings up loopback and, when the task has a proxy,
// listens on 127.0.0.1:<port> and hands each accepted connection to the
// parent (which dials the proxy on the host).
//
// It then forks the command, which first drops every capability, sets
// no_new_privs and the file size limit and enters a Landlock domain (writes
// only to the copy, /tmp, /dev's named devices and --allow-write; TCP
// connect only to the proxy port; abstract unix sockets and signals scoped:
// the rules are made on this side, landlock.go, and the helper applies
// exactly those)
// and, last, a seccomp filter (io_uring, ptrace, keyrings, new user
// namespaces, TIOCSTI and the usual privileged calls refused with EPERM)
// before it execs, so the command is narrowed from its first instruction
// while PID 1 stays outside the domain (the command can neither signal nor
// ptrace it). The command runs in a session of its own with only
// stdio open. When stdin is the person's terminal, the command gets a pty of
// its own from the private devpts as its controlling terminal, and PID 1
// relays keys and output (the output from a thread of its own, so that a
// terminal taking no output stalls neither signals nor keys); the person's
// terminal never reaches the command,
// so TIOCSTI cannot inject into it. PID 1 forwards signals and reaps
// orphans; once the command ends it kills whatever is left in the
// namespace, waits until nothing is, tells kule the exit code on a pipe of
// its own (kule goes on while the kernel takes the namespaces down) and
// exits with it.
//
// The plan (plan.go) crosses to the helper in a binary form of its own
// (plancodec.go), made by kule once the helper is forked; the helper reads
// it before it does anything, so a plan refused, or never sent, leaves
// nothing done. A go byte follows the plan once what the run waits for (the
// task's proxy) is ready: the helper makes its mounts meanwhile, and without
// the go it ends before the command.
//
// Without user namespaces (weaker isolation accepted) the helper narrows
// itself the same way and execs the command: no PID 1, no mounts.
//
// If a part of the sandbox cannot be set up the command does not run (fail
// closed) and the error names what is missing, unless the person accepted
// weaker isolation (`kule isolation --accept-weaker on`).
//
// On macOS the same Runner uses a Seatbelt profile (see seatbelt.go); that
// path is written but untested on a Mac.
package sandbox
