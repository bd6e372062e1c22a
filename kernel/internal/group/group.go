// Package group keeps the person's groups of tasks: a name, a colour and a
// policy of their own (the home's default, balanced, careful, or a Cedar file
// written for the group, validated before it is kept). Groups live in
// $KULE_HOME/groups.json; a group's own policy in $KULE_HOME/groups/<id>.cedar.
// A task names its group in task.json (Task.Group).
package group

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kulehq/kule/kernel/internal/atomicfile"
	"github.com/kulehq/kule/kernel/internal/policy"
	"github.com/kulehq/kule/kernel/internal/task"
)

// The policies a group may hold.
const (
	Default = ""         // whatever holds for the home (policy.cedar or the built-in choice)
	Own     = "own"      // groups/<id>.cedar, written for the group
	Balance = "balanced" // the built-in balanced policy
	Careful = "careful"  // the built-in careful policy
)

// Errors a caller can test for.
var (
	ErrNotFound  = errors.New("no such group")
	ErrBadGroup  = errors.New("a group needs a name of one line")
	ErrBadPolicy = errors.New("a group's policy is the default, balanced, careful or its own")
	ErrDamaged   = errors.New("groups.json is damaged")
	ErrNoOwn     = errors.New("the group's own policy file is missing")
)

// Group is one group of tasks.
type Group struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Colour string `json:"colour,omitempty"`
	Policy string `json:"policy,omitempty"` // Default, Balance, Careful or Own
	Order  int    `json:"order,omitempty"`
}

// Store reads and writes the groups of one Kule home.
type Store struct{ home string }

// Open returns the groups of a home.
func Open(kuleHome string) *Store { return &Store{home: kuleHome} }

func (s *Store) path() string     { return filepath.Join(s.home, "groups.json") }
func (s *Store) lockPath() string { return filepath.Join(s.home, "groups.lock") }

// PolicyPath is where a group's own policy is kept.
func (s *Store) PolicyPath(id string) string {
	return filepath.Join(s.home, "groups", id+".cedar")
}

type file struct {
	Groups []Group `json:"groups"`
}

// List returns the groups in the person's order.
func (s *Store) List() ([]Group, error) {
	b, err := os.ReadFile(s.path())
	if errors.Is(err, os.ErrNotExist) {
		return []Group{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	gs, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("groups: %s: %w (move it aside to start with no groups; no task is changed)", s.path(), err)
	}
	return gs, nil
}

// Decode parses groups.json strictly.
func Decode(b []byte) ([]Group, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if !validID(g.ID) || seen[g.ID] {
			return nil, fmt.Errorf("%w: group id %q bad or twice", ErrDamaged, g.ID)
		}
		seen[g.ID] = true
		if err := checkPolicy(g.Policy); err != nil {
			return nil, fmt.Errorf("%w: group %s: %v", ErrDamaged, g.ID, err)
		}
	}
	if f.Groups == nil {
		f.Groups = []Group{}
	}
	sort.SliceStable(f.Groups, func(i, j int) bool { return f.Groups[i].Order < f.Groups[j].Order })
	return f.Groups, nil
}

func validID(id string) bool {
	if len(id) != 8 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func checkPolicy(p string) error {
	switch p {
	case Default, Own, Balance, Careful:
		return nil
	}
	return fmt.Errorf("%w (got %q)", ErrBadPolicy, p)
}

// Get returns one group.
func (s *Store) Get(id string) (Group, error) {
	gs, err := s.List()
	if err != nil {
		return Group{}, err
	}
	for _, g := range gs {
		if g.ID == id {
			return g, nil
		}
	}
	return Group{}, fmt.Errorf("group %s: %w", id, ErrNotFound)
}

// CleanName keeps a name to one line of at most 60 characters.
func CleanName(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60])
	}
	return s
}

// Edit is a change to a group; nil fields stay as they are. OwnPolicy, when
// set, is the Cedar text of the group's own policy: it is validated with
// kernel/internal/policy before it is kept and makes the group's Policy Own.
type Edit struct {
	Name      *string
	Colour    *string
	Policy    *string
	OwnPolicy *string
}

// Create makes a group.
func (s *Store) Create(e Edit) (Group, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Group{}, err
	}
	return s.update(hex.EncodeToString(b[:]), true, e)
}

// Change edits a group.
func (s *Store) Change(id string, e Edit) (Group, error) { return s.update(id, false, e) }

func (s *Store) update(id string, create bool, e Edit) (Group, error) {
	if e.Policy != nil {
		if err := checkPolicy(*e.Policy); err != nil {
			return Group{}, err
		}
	}
	if e.OwnPolicy != nil {
		if err := policy.Validate("the group's policy", []byte(*e.OwnPolicy)); err != nil {
			return Group{}, fmt.Errorf("group: %w (the group's policy was not changed)", err)
		}
	}
	l, err := task.LockFile(s.lockPath())
	if err != nil {
		return Group{}, err
	}
	defer l.Unlock()
	gs, err := s.List()
	if err != nil {
		return Group{}, err
	}
	i := slices.IndexFunc(gs, func(g Group) bool { return g.ID == id })
	switch {
	case create:
		gs = append(gs, Group{ID: id, Order: len(gs) + 1})
		i = len(gs) - 1
	case i < 0:
		return Group{}, fmt.Errorf("group %s: %w", id, ErrNotFound)
	}
	g := &gs[i]
	if e.Name != nil {
		g.Name = CleanName(*e.Name)
	}
	if g.Name == "" {
		return Group{}, ErrBadGroup
	}
	if e.Colour != nil {
		g.Colour = *e.Colour
	}
	if e.Policy != nil {
		if *e.Policy == Own && e.OwnPolicy == nil {
			if _, err := os.Stat(s.PolicyPath(id)); err != nil {
				return Group{}, fmt.Errorf("group %s: %w; write the policy first", id, ErrNoOwn)
			}
		}
		g.Policy = *e.Policy
	}
	if e.OwnPolicy != nil {
		if err := os.MkdirAll(filepath.Dir(s.PolicyPath(id)), 0o700); err != nil {
			return Group{}, err
		}
		if err := atomicfile.Write(s.PolicyPath(id), []byte(*e.OwnPolicy), 0o600); err != nil {
			return Group{}, fmt.Errorf("group: %w", err)
		}
		g.Policy = Own
	}
	out := *g
	return out, s.save(gs)
}

// Delete removes a group; its tasks go back to no group.
func (s *Store) Delete(id string, tasks *task.Store) error {
	l, err := task.LockFile(s.lockPath())
	if err != nil {
		return err
	}
	defer l.Unlock()
	gs, err := s.List()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(gs, func(g Group) bool { return g.ID == id })
	if i < 0 {
		return fmt.Errorf("group %s: %w", id, ErrNotFound)
	}
	if tasks != nil {
		ts, err := tasks.List()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if t.Group != id {
				continue
			}
			tl, err := task.LockFile(t.Paths.Lock)
			if err != nil {
				return err
			}
			fresh, err := tasks.Load(t.ID)
			if err == nil {
				fresh.Group = ""
				err = tasks.Save(fresh)
			}
			tl.Unlock()
			if err != nil {
				return err
			}
		}
	}
	if err := s.save(slices.Delete(gs, i, i+1)); err != nil {
		return err
	}
	_ = os.Remove(s.PolicyPath(id))
	return nil
}

// OwnPolicy returns the text of the group's own policy ("" when none).
func (s *Store) OwnPolicy(id string) (string, error) {
	b, err := os.ReadFile(s.PolicyPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func (s *Store) save(gs []Group) error {
	b, err := json.MarshalIndent(file{Groups: gs}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path(), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("groups: save: %w", err)
	}
	return nil
}

// LoadPolicy reads the policy that judges a task of the group id (""
// for none) on folder: the home's policy for Default, the built-in choice,
// or the group's own file. choice is the home's built-in choice.
func (s *Store) LoadPolicy(id, folder, choice string) (*policy.Engine, error) {
	if id == "" {
		return policy.Load(s.home, folder, choice)
	}
	g, err := s.Get(id)
	if errors.Is(err, ErrNotFound) {
		return policy.Load(s.home, folder, choice) // a group deleted meanwhile: the default
	}
	if err != nil {
		return nil, err
	}
	switch g.Policy {
	case Balance, Careful:
		return policy.LoadGroup(s.home, folder, g.Policy, "")
	case Own:
		p := s.PolicyPath(g.ID)
		if _, err := os.Lstat(p); err != nil {
			return nil, fmt.Errorf("group %q: %w (%s); nothing is committed under it until the group's policy is written again or set to another", g.Name, ErrNoOwn, p)
		}
		return policy.LoadGroup(s.home, folder, choice, p)
	}
	return policy.Load(s.home, folder, choice)
}
