package secrets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/task"
)

// Leases: a secret kept with a lease is held by a task only for a while.
// The person approves a budget (how long one lease lasts, how many times
// Kule may renew it on its own), never a standing key. A minted secret has
// no stored value at all: each lease runs the secret's mint command
// (outside every sandbox, as the person) for a token of its own, and its
// revoke command when the lease ends. Every lease held is written to the
// ledger $KULE_HOME/leases.jsonl, so leases a crash left behind are found
// and revoked at the daemon's next start (Leases.Sweep).

// Errors of leases.
var (
	ErrLeaseSpent  = errors.New("secrets: the lease is spent")
	ErrLeaseEnded  = errors.New("secrets: the lease was released")
	ErrBadLease    = errors.New("secrets: a lease lasts at least a second and renews at most 1000 times")
	ErrMint        = errors.New("secrets: the mint command failed")
	ErrRevoke      = errors.New("secrets: the revoke command failed")
	ErrNoLease     = errors.New("secrets: the secret is not kept with a lease")
	ErrMintAndKeep = errors.New("secrets: a minted secret keeps no value")
)

// LeaseSpec is how a secret is leased: what the person approved.
type LeaseSpec struct {
	Every    time.Duration `json:"every"`            // how long one lease lasts before it must be renewed
	Renewals int           `json:"renewals"`         // how many times Kule may renew it without asking
	Mint     string        `json:"mint,omitempty"`   // a shell command that prints a fresh token
	Revoke   string        `json:"revoke,omitempty"` // a shell command that revokes the token on its stdin
}

func (s LeaseSpec) check() error {
	if s.Every < time.Second || s.Renewals < 0 || s.Renewals > 1000 {
		return ErrBadLease
	}
	return nil
}

// AddLeased keeps a secret that tasks hold only as a lease. A secret with
// spec.Mint keeps no value (value must be ""); any other needs one.
func (s *Store) AddLeased(name, value string, hosts []string, spec LeaseSpec) (bool, error) {
	if err := spec.check(); err != nil {
		return false, err
	}
	if spec.Mint != "" && value != "" {
		return false, ErrMintAndKeep
	}
	return s.add(Secret{Name: name, Value: value, Hosts: hosts, Lease: &spec})
}

// Lease is one lease as the ledger keeps it: who holds which secret until
// when, and what of the budget is left. The token itself is in the ledger
// only sealed (for a revoke after a crash); it is not in this value.
type Lease struct {
	ID       string    `json:"id"`
	Secret   string    `json:"secret"`
	Holder   string    `json:"holder"` // the task id
	Hosts    []string  `json:"hosts"`
	Owner    int       `json:"owner"`       // the pid of the kule that holds it
	OwnerAt  string    `json:"owner_start"` // that process's start (pids are reused)
	Granted  time.Time `json:"granted"`
	Expires  time.Time `json:"expires"`
	Left     int       `json:"renewals_left"`
	Renewed  int       `json:"renewed"`
	Minted   bool      `json:"minted,omitempty"`
	Revoke   string    `json:"revoke,omitempty"`
	Sealed   []byte    `json:"sealed,omitempty"` // the minted token, sealed: only a revoke reads it
	Released bool      `json:"-"`
}

// LedgerPath is $KULE_HOME/leases.jsonl.
func LedgerPath(home string) string { return filepath.Join(home, "leases.jsonl") }

// Leases hands out and takes back the leases of one Kule home.
type Leases struct {
	home   string
	sealer Sealer
	// Now is the clock (tests move it).
	Now func() time.Time
	// Run runs a mint or revoke command outside every sandbox and returns
	// its standard output; stdin is given to it. Tests may replace it.
	Run func(ctx context.Context, command string, env []string, stdin string) (string, error)
	// Pid and PidStart name the process that holds the leases it hands out.
	Pid      int
	PidStart string
}

// Leases returns the lease keeper of the store's home.
func (s *Store) Leases() *Leases {
	home := filepath.Dir(s.dir)
	return &Leases{home: home, sealer: s.sealer, Now: time.Now, Run: runShell, Pid: os.Getpid(), PidStart: procStart(os.Getpid())}
}

// commandTimeout bounds a mint or revoke command.
const commandTimeout = 30 * time.Second

// runShell runs command with sh -c as the person, outside every sandbox,
// with Kule's own environment and env added.
func runShell(ctx context.Context, command string, env []string, stdin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, lastLine(errb.String()))
	}
	return out.String(), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// procStart is the start time of process pid (field 22 of /proc/pid/stat),
// "" when there is no such process.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; the fields after it do not.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Alive reports whether the process that holds l still runs.
func Alive(l Lease) bool { return l.OwnerAt != "" && procStart(l.Owner) == l.OwnerAt }

// Held is a lease a task holds. Its Value is what the proxy puts into
// requests; it renews on its own within the budget, and fails closed once
// the budget is spent.
type Held struct {
	ls    *Leases
	sec   Secret
	mu    sync.Mutex
	lease Lease
	token string
	ended bool
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Acquire gives holder (a task id) a lease of sec. left is the renewals
// the lease may still take (a resumed run passes what its checkpoint kept);
// a negative left takes the whole budget of the secret's LeaseSpec.
func (ls *Leases) Acquire(ctx context.Context, sec Secret, holder string, left int) (*Held, error) {
	if sec.Lease == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoLease, sec.Name)
	}
	if left < 0 || left > sec.Lease.Renewals {
		left = sec.Lease.Renewals
	}
	now := ls.Now().UTC()
	h := &Held{ls: ls, sec: sec, lease: Lease{
		ID: newID(), Secret: sec.Name, Holder: holder, Hosts: sec.Hosts, Owner: ls.Pid, OwnerAt: ls.PidStart,
		Granted: now, Expires: now.Add(sec.Lease.Every), Left: left, Minted: sec.Lease.Mint != "", Revoke: sec.Lease.Revoke,
	}}
	tok, err := h.mint(ctx)
	if err != nil {
		return nil, err
	}
	h.token = tok
	if err := ls.record(h); err != nil {
		_ = h.revoke(ctx, tok)
		return nil, err
	}
	return h, nil
}

// mint is the token of a new lease: the mint command's first line, or the
// kept value.
func (h *Held) mint(ctx context.Context) (string, error) {
	if h.sec.Lease.Mint == "" {
		if h.sec.Value == "" {
			return "", fmt.Errorf("%w: %s", ErrEmptyValue, h.sec.Name)
		}
		return h.sec.Value, nil
	}
	out, err := h.ls.Run(ctx, h.sec.Lease.Mint, []string{"KULE_LEASE_ID=" + h.lease.ID, "KULE_LEASE_HOLDER=" + h.lease.Holder, "KULE_SECRET=" + h.sec.Name}, "")
	if err != nil {
		return "", fmt.Errorf("%w for %s: %v (no lease was given)", ErrMint, h.sec.Name, err)
	}
	tok, _, _ := strings.Cut(strings.TrimLeft(out, "\r\n"), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("%w for %s: it printed nothing (no lease was given)", ErrMint, h.sec.Name)
	}
	if strings.ContainsFunc(tok, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return "", fmt.Errorf("%w for %s: %w", ErrMint, h.sec.Name, ErrBadValue)
	}
	return tok, nil
}

// revoke runs the revoke command for tok; minted leases only.
func (h *Held) revoke(ctx context.Context, tok string) error {
	return h.ls.revoke(ctx, h.lease, tok)
}

func (ls *Leases) revoke(ctx context.Context, l Lease, tok string) error {
	if !l.Minted || l.Revoke == "" || tok == "" {
		return nil
	}
	if _, err := ls.Run(ctx, l.Revoke, []string{"KULE_LEASE_ID=" + l.ID, "KULE_LEASE_HOLDER=" + l.Holder, "KULE_SECRET=" + l.Secret, "KULE_LEASE_TOKEN=" + tok}, tok+"\n"); err != nil {
		return fmt.Errorf("%w for %s (lease %s): %v", ErrRevoke, l.Secret, l.ID, err)
	}
	return nil
}

// Value is the lease's credential now: the current one while the lease is
// valid, a renewed one once it ran out and the budget allows, and
// ErrLeaseSpent (nothing is sent) once it does not.
func (h *Held) Value(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return "", fmt.Errorf("%w: %s", ErrLeaseEnded, h.sec.Name)
	}
	now := h.ls.Now()
	if now.Before(h.lease.Expires) {
		return h.token, nil
	}
	if h.lease.Left <= 0 {
		h.lease.Left = h.ls.granted(h.lease.ID)
	}
	if h.lease.Left <= 0 {
		return "", fmt.Errorf("%w: the lease of %s for task %s ran out at %s and its %d renewals are used; nothing was sent. A person can grant more: kule secrets grant %s %s --renew N",
			ErrLeaseSpent, h.sec.Name, h.lease.Holder, h.lease.Expires.Format(time.RFC3339), h.lease.Renewed, h.lease.Holder, h.sec.Name)
	}
	old := h.token
	tok, err := h.mint(ctx)
	if err != nil {
		return "", err
	}
	h.token = tok
	h.lease.Left--
	h.lease.Renewed++
	h.lease.Expires = now.UTC().Add(h.sec.Lease.Every)
	if err := h.ls.record(h); err != nil {
		return "", err
	}
	if old != tok {
		if err := h.revoke(ctx, old); err != nil {
			return "", err
		}
	}
	return tok, nil
}

// Lease is the lease as it stands (without its token).
func (h *Held) Lease() Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lease
	l.Sealed, l.Released = nil, h.ended
	return l
}

// Left is the renewals left: what a checkpoint keeps of the lease (never
// its token), for a resumed run to Acquire with.
func (h *Held) Left() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease.Left
}

// Release ends the lease: its token is revoked and it leaves the ledger.
// A second Release does nothing.
func (h *Held) Release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return nil
	}
	h.ended = true
	rerr := h.revoke(ctx, h.token)
	h.token = ""
	if rerr != nil {
		// Kept in the ledger: the next sweep tries the revoke again.
		return rerr
	}
	return h.ls.drop(h.lease.ID)
}

// ledger reads and rewrites the ledger under its lock.
func (ls *Leases) ledger(change func([]Lease) ([]Lease, error)) error {
	p := LedgerPath(ls.home)
	lock, err := task.LockFile(p + ".lock")
	if err != nil {
		return fmt.Errorf("secrets: leases: %w", err)
	}
	defer lock.Unlock()
	list, err := readLedger(p)
	if err != nil {
		return err
	}
	next, err := change(list)
	if err != nil || next == nil {
		return err
	}
	return atomicfile.WriteWith(p, atomicfile.Options{Perm: 0o600}, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, l := range next {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			bw.Write(b)
			bw.WriteByte('\n')
		}
		return bw.Flush()
	})
}

// readLedger reads the ledger; a line that does not parse is an error (a
// lease could hide behind it).
func readLedger(p string) ([]Lease, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: leases: %w", err)
	}
	var out []Lease
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l Lease
		if err := json.Unmarshal(line, &l); err != nil || l.ID == "" {
			return nil, fmt.Errorf("%w: %s line %d", ErrDamaged, p, i+1)
		}
		out = append(out, l)
	}
	return out, nil
}

func leaseAAD(id string) []byte { return []byte("kule-lease:" + id) }

// record writes h's lease into the ledger (its token sealed, when minted).
func (ls *Leases) record(h *Held) error {
	l := h.lease
	l.Sealed = nil
	if l.Minted && l.Revoke != "" {
		sealed, err := ls.sealer.Seal([]byte(h.token), leaseAAD(l.ID))
		if err != nil {
			return fmt.Errorf("secrets: leases: seal: %w", err)
		}
		l.Sealed = sealed
	}
	return ls.ledger(func(list []Lease) ([]Lease, error) {
		out := list[:0:0]
		for _, x := range list {
			if x.ID != l.ID {
				out = append(out, x)
			}
		}
		return append(out, l), nil
	})
}

func (ls *Leases) drop(id string) error {
	return ls.ledger(func(list []Lease) ([]Lease, error) {
		out := []Lease{}
		for _, x := range list {
			if x.ID != id {
				out = append(out, x)
			}
		}
		return out, nil
	})
}

// List is the ledger: every lease held, oldest first, tokens left out.
func (ls *Leases) List() ([]Lease, error) {
	list, err := readLedger(LedgerPath(ls.home))
	for i := range list {
		list[i].Sealed = nil
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Granted.Before(list[j].Granted) })
	return list, err
}

// sweepChecksAlive keeps a sweep from revoking the lease of a holder that
// still runs (a kule exec beside the daemon's start). Tests turn it off to
// show what it guards.
var sweepChecksAlive = true

// Sweep revokes and drops the leases whose holding process is gone (a
// crash, a kill -9) and returns them. A lease whose revoke fails stays in
// the ledger for the next sweep, and the error says so.
func (ls *Leases) Sweep(ctx context.Context) ([]Lease, error) {
	var swept []Lease
	var errs []error
	err := ls.ledger(func(list []Lease) ([]Lease, error) {
		out := []Lease{}
		for _, l := range list {
			if sweepChecksAlive && Alive(l) {
				out = append(out, l)
				continue
			}
			var tok string
			if len(l.Sealed) > 0 {
				b, err := ls.sealer.Open(l.Sealed, leaseAAD(l.ID))
				if err != nil {
					errs = append(errs, fmt.Errorf("secrets: sweep: lease %s: %w", l.ID, err))
					out = append(out, l)
					continue
				}
				tok = string(b)
			}
			if err := ls.revoke(ctx, l, tok); err != nil {
				errs = append(errs, err)
				out = append(out, l)
				continue
			}
			l.Sealed = nil
			swept = append(swept, l)
		}
		return out, nil
	})
	if err != nil {
		return swept, err
	}
	return swept, errors.Join(errs...)
}

// granted is the renewals the ledger grants lease id now (a person may
// have granted more with Grant since it was recorded).
func (ls *Leases) granted(id string) int {
	list, err := readLedger(LedgerPath(ls.home))
	if err != nil {
		return 0
	}
	for _, l := range list {
		if l.ID == id {
			return l.Left
		}
	}
	return 0
}

// Grant gives the leases of secret held by holder n more renewals (a
// person answering a spent lease) and returns how many leases it changed.
func (ls *Leases) Grant(holder, secret string, n int) (int, error) {
	if n < 1 || n > 1000 {
		return 0, ErrBadLease
	}
	changed := 0
	err := ls.ledger(func(list []Lease) ([]Lease, error) {
		for i := range list {
			if list[i].Holder == holder && list[i].Secret == secret {
				list[i].Left += n
				changed++
			}
		}
		if changed == 0 {
			return nil, nil
		}
		return list, nil
	})
	return changed, err
}
