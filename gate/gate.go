package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
	"github.com/mcpgate/mcpgate/vocab"
)

// regexp2 matches are bounded by the default time limit from the start (Load lowers it
// further for a shorter one).
func init() { sandbox.LowerRegexpTimeout(DefaultTimeout) }

// DefaultTimeout is the per-policy time limit (docs/decisions.md#policies).
const DefaultTimeout = 5 * time.Second

// SuggestedPolicyHeapBudget is a per-policy heap budget for Options.PolicyHeapBudget
// (128 MiB plus 32 bytes per byte of input): string doubling (`s = s + s`) then stops
// at a 128 MiB string with about 225 MiB of heap. It is off by default because the
// heap is the process's: a large result handled by another call at the same time
// would count against an innocent policy.
const SuggestedPolicyHeapBudget = 128 << 20

// DefaultDebounce is how long Watch waits for a burst of file events to settle.
const DefaultDebounce = 150 * time.Millisecond

// Options configure a Gate. Dir must exist, or FS be set.
type Options struct {
	Dir string // policies directory; top-level *.js only, lexical order
	// FS, when Dir is "", holds the policies instead: its top-level *.js, in lexical
	// order. Reload reads it again; Watch needs Dir.
	FS fs.FS
	// Builtin, when set, holds policies that run before those of Dir or FS, under the
	// name "builtin/<file>" (the strict profile's shipped redaction policies,
	// docs/policies.md#profiles); a file of Dir or FS with the same base name replaces
	// the built-in one, so an operator's copy of a shipped policy does not run twice.
	Builtin    fs.FS
	PoolSize   int           // runtimes phases other than pre share; one more is kept for pre phases; 0 means GOMAXPROCS
	Timeout    time.Duration // per policy; 0 means DefaultTimeout
	Evaluators string        // GATE_EVALUATORS; "" means "goja"; unknown names are an error
	Console    bool          // expose console.log to policies (debug only)
	Analyzer   *engine.Analyzer
	Logger     *slog.Logger

	// HeapSoftLimit is the live-heap size in bytes past which the watchdog interrupts
	// running policies (policy_memory_limit). 0 means 75% of the Go memory limit when
	// one is set (GOMEMLIMIT), else 1 GiB.
	HeapSoftLimit uint64
	// PolicyHeapBudget is how far the heap may grow while one policy runs before the
	// watchdog interrupts it (policy_memory_limit); it grows by 32 bytes per byte of
	// the phase's input JSON. The heap is the process's, so an unrelated burst of
	// allocation during a long policy counts too. 0 (the default) turns it off and
	// leaves HeapSoftLimit as the only heap guard; see SuggestedPolicyHeapBudget.
	PolicyHeapBudget uint64
	// Debounce is Watch's settle time for file events; 0 means DefaultDebounce.
	Debounce time.Duration
	// Revision labels the set FS holds: a policy bundle's revision
	// (docs/decisions.md#policy-bundles), carried by Set and Status; "" for none.
	Revision string
}

// Rejection is a policy's refusal of a call. Message goes to the client only, never
// to an audit record or a log; errors.Is matches its Code (a vocab.Reason).
type Rejection = vocab.Rejection

// Result is what one phase of the policy set did.
type Result struct {
	Params            json.RawMessage // pre: the arguments to send upstream
	Content           json.RawMessage // post: the content array to return
	StructuredContent json.RawMessage // post: structuredContent (nil when absent)
	Changed           bool            // by JSON equality with the input
	Action            vocab.Action    // strongest policy effect: pass, warn, redact or mask (docs/decisions.md#ladder)
	Acted             []string        // policy files that changed, warned or rejected, in order
	Reject            *Rejection
	Elapsed           time.Duration
	// Warnings are the ctx.warn(reason) calls, in order. Reasons may quote call data:
	// never log them or put them in an audit record.
	Warnings []Warning
	// Removed is, in a list phase, the policy file that last dropped each tool from
	// ctx.tools, by name (in Acted's terms); nil when none dropped one.
	Removed map[string]string
}

// Gate holds the current compiled policy set and reloads it. Safe for concurrent use.
type Gate struct {
	opts     Options
	pool     *pool
	analyzer *engine.Analyzer
	log      *slog.Logger

	set      atomic.Pointer[Set]
	reloadMu sync.Mutex
	lastErr  atomic.Pointer[string]
	loadedAt atomic.Pointer[time.Time]

	closeOnce sync.Once
	closed    chan struct{}
}

// Set is one compiled generation of the policy set; it never changes once built.
type Set struct {
	Generation uint64
	Hash       string   // sha256 of the sources, hex
	Files      []string // file names in run order
	Revision   string   // the policy bundle's revision (Options.Revision, Swap); "" for none
	// TenantHash and TenantRevision are the tenant layer's Hash and Revision in a
	// Layered set; "" otherwise.
	TenantHash, TenantRevision string

	layers   *layers // a tenant's stack (Layered); nil for a set of one directory
	policies []policy
	pool     *pool
	timeout  time.Duration
	analyzer *engine.Analyzer
}

// Load compiles every top-level *.js in opts.Dir (docs/decisions.md#policies, #missing-directory). It
// errors when the directory does not exist (ErrNoDir), a policy does not compile
// (*CompileError with file, line and message; ErrSyntax), GATE_EVALUATORS names
// anything but goja (ErrUnknownEval), or the sandbox self-test fails
// (ErrLockdownFailed). ctx bounds only the load itself.
func Load(ctx context.Context, opts Options) (*Gate, error) {
	for _, e := range strings.Split(opts.Evaluators, ",") {
		if e = strings.TrimSpace(e); e != "" && e != "goja" {
			return nil, fmt.Errorf("%w: %q (supported: goja)", ErrUnknownEval, e)
		}
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = runtime.GOMAXPROCS(0)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.HeapSoftLimit == 0 {
		opts.HeapSoftLimit = 1 << 30
		if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < 1<<62 {
			opts.HeapSoftLimit = uint64(lim) / 4 * 3
		}
	}
	an := opts.Analyzer
	if an == nil {
		var err error
		if an, err = engine.New(engine.Options{}); err != nil {
			return nil, fmt.Errorf("gate: analyzer: %w", err)
		}
	}
	sandbox.LowerRegexpTimeout(opts.Timeout)
	g := &Gate{opts: opts, analyzer: an, log: opts.Logger, closed: make(chan struct{})}
	g.pool = newPool(g, opts.PoolSize, opts.Console, opts.Logger, opts.HeapSoftLimit, opts.PolicyHeapBudget)
	if err := ctx.Err(); err != nil {
		g.pool.close()
		return nil, err
	}
	g.pool.warming.Add(1)
	go func() { // beside the build and the server's start (docs/decisions.md#background-self-test)
		defer g.pool.warming.Done()
		if g.pool.testErr = selfTest(g.pool); g.pool.testErr != nil {
			g.log.Error("gate: the sandbox failed its self-test; every call a policy acts on is refused (policy_error)", "err", g.pool.testErr)
		}
		close(g.pool.tested)
	}()
	set, err := g.build(1)
	if err != nil {
		g.pool.close()
		return nil, err
	}
	g.swap(set)
	from := []any{"dir", opts.Dir}
	if opts.FS != nil { // a policy bundle's files: it has no directory, only a revision
		from = []any{"policy_revision", opts.Revision}
	}
	g.log.Info("gate: policies loaded", append(from, "generation", set.Generation,
		"hash", set.Hash, "files", set.Files)...)
	return g, nil
}

// build reads and compiles the whole directory into a new Set.
func (g *Gate) build(gen uint64) (*Set, error) {
	var names []string
	var srcs [][]byte
	var err error
	if g.opts.Dir == "" && g.opts.FS != nil {
		names, srcs, err = readFS(g.opts.FS)
	} else {
		names, srcs, err = readDir(g.opts.Dir)
	}
	if err != nil {
		return nil, err
	}
	if g.opts.Builtin != nil {
		if names, srcs, err = withBuiltin(g.opts.Builtin, names, srcs); err != nil {
			return nil, err
		}
	}
	set := &Set{
		Generation: gen,
		Hash:       hashSources(names, srcs),
		Files:      names,
		Revision:   g.opts.Revision,
		pool:       g.pool,
		timeout:    g.opts.Timeout,
		analyzer:   g.analyzer,
	}
	for i, name := range names {
		p, err := compilePolicy(name, srcs[i])
		if err != nil {
			return nil, err
		}
		set.policies = append(set.policies, p)
	}
	return set, nil
}

func (g *Gate) swap(s *Set) {
	now := time.Now()
	g.set.Store(s)
	g.loadedAt.Store(&now)
	g.lastErr.Store(nil)
	g.pool.warming.Add(1)
	go func() {
		defer g.pool.warming.Done()
		g.pool.warm(s)
	}()
}

// Current returns the policy set new calls should use; a call keeps its *Set for
// both phases even when a reload swaps in a new one.
func (g *Gate) Current() *Set { return g.set.Load() }

// Reload compiles the directory again and swaps the new set in atomically (generation
// + 1); on error the last good set stays, Status shows the error and it is logged
// with file and line. Call it on SIGHUP.
func (g *Gate) Reload() error {
	select {
	case <-g.closed:
		return ErrClosed
	default:
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	cur := g.set.Load()
	set, err := g.build(cur.Generation + 1)
	if err != nil {
		msg := err.Error()
		g.lastErr.Store(&msg)
		attrs := []any{"dir", g.opts.Dir, "generation", cur.Generation, "error", msg}
		var ce *CompileError
		if errors.As(err, &ce) {
			attrs = append(attrs, "file", ce.File, "line", ce.Line)
		}
		g.log.Error("gate: reload failed; keeping the last good policy set", attrs...)
		return err
	}
	if g.lastErr.Load() != nil { // the set loads again after a failed reload: say so, once
		gen := cur.Generation
		if set.Hash != cur.Hash {
			gen = set.Generation
		}
		g.log.Info("gate: policy reload recovered; the set compiles again", "dir", g.opts.Dir,
			"generation", gen, "hash", set.Hash)
	}
	if set.Hash == cur.Hash {
		g.lastErr.Store(nil)
		return nil // nothing changed: keep the generation
	}
	g.swap(set)
	g.log.Info("gate: policies reloaded", "generation", set.Generation, "hash", set.Hash, "files", set.Files)
	return nil
}

// Swap replaces the policies with those of fsys, labelled revision (a verified policy
// bundle, docs/decisions.md#policy-bundles), compiled and swapped in as Reload does
// (generation + 1, even when only the revision changed). On error the running set
// and its source stay, Status shows the error, and it is logged.
func (g *Gate) Swap(fsys fs.FS, revision string) error {
	select {
	case <-g.closed:
		return ErrClosed
	default:
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	cur := g.set.Load()
	old := g.opts
	g.opts.Dir, g.opts.FS, g.opts.Revision = "", fsys, revision
	set, err := g.build(cur.Generation + 1)
	if err != nil {
		g.opts = old
		msg := err.Error()
		g.lastErr.Store(&msg)
		g.log.Error("gate: policy bundle does not compile; keeping the last good policy set", "revision", revision, "error", msg)
		return err
	}
	g.swap(set)
	g.log.Info("gate: policies swapped", "generation", set.Generation, "revision", revision, "hash", set.Hash, "files", set.Files)
	return nil
}

// Watch hot-reloads on file changes in Dir (create, write, rename, remove, including
// editors that save by renaming) after Debounce, until ctx is done or Close. It
// errors only when the watcher cannot start.
func (g *Gate) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("gate: watch: %w", err)
	}
	defer w.Close()
	if g.opts.Dir == "" {
		return errors.New("gate: watch: policies loaded from an fs.FS, not a directory")
	}
	if err := w.Add(g.opts.Dir); err != nil {
		return fmt.Errorf("gate: watch %s: %w", g.opts.Dir, err)
	}
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.closed:
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !strings.HasSuffix(ev.Name, ".js") && filepath.Clean(ev.Name) != filepath.Clean(g.opts.Dir) {
				continue // editor swap files and the like; the final rename names the .js
			}
			if timer == nil {
				timer = time.NewTimer(g.opts.Debounce)
			} else {
				timer.Reset(g.opts.Debounce)
			}
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			g.log.Warn("gate: watch error", "dir", g.opts.Dir, "error", err.Error())
		case <-fire:
			fire = nil
			_ = g.Reload() // logged and kept in Status
		}
	}
}

// Status is the reload state shown in logs and status output.
type Status struct {
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Revision   string    `json:"revision,omitempty"` // the policy bundle's revision
	Files      []string  `json:"files"`
	LastError  string    `json:"last_error,omitempty"`
	LoadedAt   time.Time `json:"loaded_at"`
}

// Status reports the current generation, the source hash, the files, when the set was
// loaded and the last reload error ("" after a good reload).
func (g *Gate) Status() Status {
	s := g.set.Load()
	st := Status{Generation: s.Generation, Hash: s.Hash, Revision: s.Revision, Files: append([]string(nil), s.Files...)}
	if e := g.lastErr.Load(); e != nil {
		st.LastError = *e
	}
	if t := g.loadedAt.Load(); t != nil {
		st.LoadedAt = *t
	}
	return st
}

// Close stops watching, interrupts running policies and frees the pool. Calls made
// after Close are rejected with policy_error.
func (g *Gate) Close() error {
	g.closeOnce.Do(func() {
		close(g.closed)
		g.pool.close()
		g.pool.warming.Wait() // a runtime it was building is dropped as it is put back
	})
	return nil
}

// Only returns a set that runs only the named files of s, in s's order (a test that
// exercises one policy of a directory). It errors on a name s does not hold.
func (s *Set) Only(files []string) (*Set, error) {
	keep := map[string]bool{}
	for _, f := range files {
		keep[f] = true
	}
	sub := *s
	sub.policies, sub.Files = nil, nil
	for _, p := range s.policies {
		if keep[p.Name] {
			sub.policies = append(sub.policies, p)
			sub.Files = append(sub.Files, p.Name)
			delete(keep, p.Name)
		}
	}
	for f := range keep {
		return nil, fmt.Errorf("no policy %q in the set", f)
	}
	return &sub, nil
}
