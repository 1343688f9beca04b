// Package pins remembers the first definition seen for each (server, tool) across
// restarts, so that a server changing a tool after the agent has seen it (a "rug
// pull") is noticed (docs/channels.md#pinning).
//
// The store is one JSON file, re-read before every check so that `mcpgate pins
// approve` in another process takes effect at the next listing, and replaced
// atomically (write to a temporary file, then rename) on every change. Every
// read-modify-write holds an exclusive lock on FILE.lock (flock), so two gateways
// sharing the file never lose each other's pins. Without a file, Memory keeps the
// pins for the life of the process.
package pins

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// FileName is the store's name next to the audit store (--audit-db or --audit-file).
const FileName = "mcpgate-pins.json"

// Pin is one remembered tool definition. Definition is the tool object as the server
// listed it; Pending, when set, is a different definition seen since, waiting for
// approval.
type Pin struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Hash       string          `json:"sha256"`
	FirstSeen  string          `json:"first_seen"`
	Definition json.RawMessage `json:"definition"`
	Pending    *Pending        `json:"pending,omitempty"`
}

// Pending is a changed definition.
type Pending struct {
	// Tool, when set, is the name the definition was listed under: a tool that
	// appeared as this pinned one disappeared, with a similar schema (a rename).
	Tool       string          `json:"tool,omitempty"`
	Hash       string          `json:"sha256"`
	Seen       string          `json:"seen"`
	Definition json.RawMessage `json:"definition"`
}

type file struct {
	Version int   `json:"version"`
	Pins    []Pin `json:"pins"`
}

// Store is the pin file, or the process's memory. Safe for concurrent use, within
// one process and, for a file, across processes.
type Store struct {
	path string
	mem  *file // the pins of a Memory store
	mu   sync.Mutex
	now  func() time.Time
}

// Memory returns a store that keeps its pins in memory for the life of the process:
// a rug pull within one run is caught without a pin file.
func Memory() *Store { return &Store{mem: &file{Version: 1}, now: time.Now} }

// Open returns the store at path; the file is created at the first pin. It errors
// when the directory does not exist or the file is not a pin file.
func Open(path string) (*Store, error) {
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("pins: directory of %s does not exist", path)
	}
	s := &Store{path: path, now: time.Now}
	if _, err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the store's file; "" for a Memory store.
func (s *Store) Path() string { return s.path }

// lock takes the cross-process lock for a read-modify-write (s.mu held) and returns
// its release; a Memory store needs none.
func (s *Store) lock() (func(), error) {
	if s.mem != nil {
		return func() {}, nil
	}
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("pins: lock %s.lock: %w", s.path, err)
	}
	return unlock, nil
}

func (s *Store) load() (*file, error) {
	if s.mem != nil {
		c := *s.mem
		c.Pins = slices.Clone(s.mem.Pins)
		return &c, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return &file{Version: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("pins: %s is not a pin file: %w", s.path, err)
	}
	return &f, nil
}

func (s *Store) save(f *file) error {
	slices.SortFunc(f.Pins, func(a, b Pin) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool))
	})
	if s.mem != nil {
		s.mem = f
		return nil
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".mcpgate-pins-*")
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("pins: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	return os.Rename(tmp.Name(), s.path)
}

// Hash is the SHA-256 of a tool definition in canonical form (members sorted, no
// insignificant whitespace), hex. It errors when def is not JSON.
func Hash(def json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(def, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v) // maps encode with sorted keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Change is a listed tool whose definition differs from its pin.
type Change struct {
	Index int // position in the listing
	Tool  string
	// Replaces, when set, is the pinned tool this new one looks like a rename of.
	Replaces string
}

// Check compares each listed tool (a tools/list entry) with its pin: a tool seen for
// the first time is pinned; one that differs is returned and remembered as pending.
// Entries that are not objects with a string name are skipped.
func (s *Store) Check(server string, tools []json.RawMessage) ([]Change, error) {
	return s.CheckListing(server, tools, false)
}

// CheckListing is Check for a listing that is whole (every page) when whole is set:
// then a tool seen for the first time while a pinned tool of the server is missing
// from the listing, with a similar definition (renamed), is not pinned but returned
// as a change replacing it, and remembered as that pin's pending definition until
// approved (docs/channels.md#pinning).
func (s *Store) CheckListing(server string, tools []json.RawMessage, whole bool) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	idx := make(map[string]int, len(f.Pins))
	for i, p := range f.Pins {
		idx[p.Server+"\x00"+p.Tool] = i
	}
	now := s.now().UTC().Format(time.RFC3339)
	dirty := false
	var changes []Change
	var gone []int // the server's pins this whole listing lacks
	if whole {
		gone = missing(f.Pins, server, tools)
	}
	for i, def := range tools {
		// the "name" key exactly, as the client reads it: encoding/json would let a
		// "NAME" beside it choose the pin, a fresh one at each listing
		var t struct{ Name string }
		var m map[string]json.RawMessage
		if json.Unmarshal(def, &m) != nil || json.Unmarshal(m["name"], &t.Name) != nil || t.Name == "" {
			continue
		}
		h, err := Hash(def)
		if err != nil {
			continue
		}
		def = bytes.TrimSpace(def)
		j, ok := idx[server+"\x00"+t.Name]
		switch {
		case !ok && len(gone) > 0 && renamed(f.Pins, gone, def) >= 0:
			j := renamed(f.Pins, gone, def)
			changes = append(changes, Change{Index: i, Tool: t.Name, Replaces: f.Pins[j].Tool})
			if p := f.Pins[j].Pending; p == nil || p.Hash != h || p.Tool != t.Name {
				f.Pins[j].Pending = &Pending{Tool: t.Name, Hash: h, Seen: now, Definition: def}
				dirty = true
			}
		case !ok:
			f.Pins = append(f.Pins, Pin{Server: server, Tool: t.Name, Hash: h, FirstSeen: now, Definition: def})
			idx[server+"\x00"+t.Name] = len(f.Pins) - 1
			dirty = true
		case f.Pins[j].Hash == h:
			if f.Pins[j].Pending != nil { // the server went back to the pinned definition
				f.Pins[j].Pending, dirty = nil, true
			}
		default:
			changes = append(changes, Change{Index: i, Tool: t.Name})
			if f.Pins[j].Pending == nil || f.Pins[j].Pending.Hash != h {
				f.Pins[j].Pending = &Pending{Hash: h, Seen: now, Definition: def}
				dirty = true
			}
		}
	}
	if dirty {
		if err := s.save(f); err != nil {
			return changes, err
		}
	}
	return changes, nil
}

// List returns every pin, sorted by server and tool.
func (s *Store) List() ([]Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	return f.Pins, nil
}

// ErrNoPin is returned when no pin matches.
var ErrNoPin = errors.New("pins: no such pin")

// ErrNothingPending is returned by Approve for a pin with no changed definition.
var ErrNothingPending = errors.New("pins: no changed definition to approve")

// ErrPendingChanged is returned by ApproveHash when the pending definition is no
// longer the one the caller saw.
var ErrPendingChanged = errors.New("pins: the changed definition changed again since it was shown")

// Approve makes the pending definition of (server, tool) the pinned one.
func (s *Store) Approve(server, tool string) error { return s.ApproveHash(server, tool, "") }

// ApproveHash is Approve of the pending definition whose sha256 is hash (Pending.Hash,
// as shown to the person approving), so that a definition that changed again in
// between is not approved unseen: ErrPendingChanged. hash "" approves whatever is
// pending.
func (s *Store) ApproveHash(server, tool, hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.load()
	if err != nil {
		return err
	}
	for i := range f.Pins {
		p := &f.Pins[i]
		if p.Server != server || (p.Tool != tool && (p.Pending == nil || p.Pending.Tool != tool)) {
			continue
		}
		if p.Pending == nil {
			return ErrNothingPending
		}
		if hash != "" && p.Pending.Hash != hash {
			return ErrPendingChanged
		}
		if p.Pending.Tool != "" { // a rename: the pin moves to the new name
			p.Tool = p.Pending.Tool
		}
		p.Hash, p.Definition, p.FirstSeen, p.Pending = p.Pending.Hash, p.Pending.Definition, p.Pending.Seen, nil
		return s.save(f)
	}
	return ErrNoPin
}

// Reset forgets the pins of server, or of one of its tools when tool is not ""; the
// next listing pins them again. It returns how many pins it removed.
func (s *Store) Reset(server, tool string) (int, error) {
	return s.remove(func(p Pin) bool { return p.Server == server && (tool == "" || p.Tool == tool) })
}

// ResetAll forgets every pin.
func (s *Store) ResetAll() (int, error) {
	return s.remove(func(Pin) bool { return true })
}

func (s *Store) remove(match func(Pin) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	f, err := s.load()
	if err != nil {
		return 0, err
	}
	kept := f.Pins[:0]
	n := 0
	for _, p := range f.Pins {
		if match(p) {
			n++
			continue
		}
		kept = append(kept, p)
	}
	if n == 0 {
		return 0, nil
	}
	f.Pins = kept
	return n, s.save(f)
}
