package gateway

import (
	"cmp"
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/gate/policytest"
	"github.com/mcpgate/mcpgate/internal/bundle"
	"github.com/mcpgate/mcpgate/internal/fixture"
	"github.com/mcpgate/mcpgate/internal/logging"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/vocab"
)

// Bundle configures gateway run --policy-bundle (docs/deploy.md#fleet): the policies
// come from a signed bundle, pulled every Poll, instead of a directory.
type Bundle struct {
	Source   string        // an https:// URL, an http:// URL of a loopback host, oci://REGISTRY/REPO:TAG, or a file path
	Key      string        // the PEM public key the bundle must be signed with
	StateDir string        // where the last good bundle is kept; "" means DefaultBundleState()
	Poll     time.Duration // between fetches, ±20% jitter; 0 means DefaultBundlePoll
	// Shadow, when positive, runs each new revision that passes its checks as the
	// shadow of live calls for this long before the swap, and refuses it (reason
	// shadow) at a block or rejection on live traffic that differs from the running
	// set's by a policy its manifest does not accept (docs/decisions.md#bundle-shadow).
	Shadow time.Duration
}

// DefaultBundlePoll is how often a policy bundle is fetched unless told otherwise.
const DefaultBundlePoll = time.Minute

// DefaultBundleState is the state directory of --policy-bundle: under systemd's
// $STATE_DIRECTORY, else $XDG_STATE_HOME/mcpgate, else ~/.local/state/mcpgate;
// "" when none of them is known.
func DefaultBundleState() string {
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return filepath.Join(d, "policy-bundle")
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mcpgate", "policy-bundle")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "mcpgate", "policy-bundle")
	}
	return ""
}

// refusal is why a bundle was not activated; reason labels the metric.
type refusal struct {
	reason string // fetch, malformed, unsigned, signature, tampered, chain, version, compile, tests, shadow, state
	err    error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(reason string, format string, args ...any) *refusal {
	return &refusal{reason: reason, err: fmt.Errorf(format, args...)}
}

// bundleSource fetches, checks and activates policy bundles
// (docs/decisions.md#policy-bundles). Activation order: signature, chain and
// min_mcpgate; compile; the bundle's own *_test.js; with Shadow, a shadow run on
// live calls; then gate.Swap. Any failure keeps the running set and is logged,
// counted and shown in /api/status.
type bundleSource struct {
	cfg     Bundle
	key     crypto.PublicKey
	fetch   *bundle.Fetcher
	state   bundle.State
	version string
	test    gate.Options // the live gate's options, for the gate a candidate's tests run in
	log     *slog.Logger

	fetches *prometheus.CounterVec // result: new, unchanged, error
	refused *prometheus.CounterVec // reason
	info    *prometheus.GaugeVec   // revision

	lastFetchGauge prometheus.GaugeFunc

	kick chan struct{} // fetchNow

	pipe         *pipeline.Pipeline // runs a Shadow trial; nil: none
	shadowFailed map[string]bool    // Signed of the revisions their shadow run refused here

	mu        sync.Mutex
	running   *bundle.Bundle
	lastFetch time.Time
	lastErr   string
	trial     *trialStatus // the shadow run under way; nil for none
}

func newBundleSource(cfg Bundle, version string, log *slog.Logger) (*bundleSource, error) {
	s := &bundleSource{cfg: cfg, version: version, kick: make(chan struct{}, 1), shadowFailed: map[string]bool{}, log: log.With("policy_bundle", logging.StripUserinfo(cfg.Source)),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcpgate_policy_bundle_fetches_total",
			Help: "Fetches of the policy bundle by result: new (an archive to check), unchanged (304 or the same bytes), error."}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcpgate_policy_bundle_refused_total",
			Help: "Policy bundles not activated, by reason; the running set stays."}, []string{"reason"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpgate_policy_bundle_info",
			Help: "1 for the revision of the running policy bundle."}, []string{"revision"}),
	}
	s.lastFetchGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgate_policy_bundle_last_fetch_timestamp_seconds",
		Help: "When the policy bundle was last fetched (or a fetch failed), Unix seconds."}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lastFetch.IsZero() {
			return 0
		}
		return float64(s.lastFetch.UnixNano()) / 1e9
	})
	if s.cfg.Poll <= 0 {
		s.cfg.Poll = DefaultBundlePoll
	}
	if s.state.Dir = cmp.Or(cfg.StateDir, DefaultBundleState()); s.state.Dir == "" {
		return nil, errors.New("--bundle-state: no state directory known (no $HOME): give one")
	}
	if cfg.Key == "" {
		return nil, errors.New("--policy-bundle needs --bundle-key PUB, the public key its bundles are signed with")
	}
	var err error
	if s.key, err = bundle.LoadPublicKey(cfg.Key); err != nil {
		return nil, fmt.Errorf("--bundle-key: %w", err)
	}
	if s.fetch, err = bundle.NewFetcher(cfg.Source); err != nil {
		return nil, fmt.Errorf("--policy-bundle: %w", err)
	}
	return s, nil
}

// start picks the bundle the gate loads: the fetched one when it passes every check,
// else the last good one on disk. With neither it errors, saying why (fail closed).
func (s *bundleSource) start(ctx context.Context, opts gate.Options) (*bundle.Bundle, error) {
	s.test = opts
	last, err := s.state.Last()
	if err != nil {
		return nil, fmt.Errorf("--bundle-state: %w", err)
	}
	if last != nil {
		if s.running, err = bundle.Read(last, s.key); err != nil {
			return nil, fmt.Errorf("the last good policy bundle in %s does not verify with --bundle-key (a new key? remove the file to start from the server's bundle): %w", s.state.Dir, err)
		}
		if !s.state.IsLatest(s.running) { // an older one put back: it would run, and refuse the latest as run before
			return nil, fmt.Errorf("the last good policy bundle in %s (revision %s) is not the last one its history names: it was replaced after it was kept; remove the directory to start from the server's bundle",
				s.state.Dir, s.running.Manifest.Revision)
		}
	}
	var b *bundle.Bundle
	var data []byte
	if s.cfg.Shadow > 0 && s.running != nil {
		// A new revision must run as the shadow of live calls first: start on the
		// last good one and fetch at once once the calls flow (poll).
		s.fetchNow()
	} else {
		b, data, err = s.next(ctx)
	}
	switch {
	case err != nil && s.running == nil:
		return nil, fmt.Errorf("policy bundle refused at start-up, and no last good bundle in %s: %w", s.state.Dir, err)
	case err != nil:
		s.failed(err)
		s.log.Warn("starting with the last good policy bundle", "revision", s.running.Manifest.Revision)
	case b != nil:
		if err := s.state.Save(data, b); err != nil {
			return nil, fmt.Errorf("--bundle-state: %w", err)
		}
		s.running = b
	case s.running == nil: // nothing fetched, nothing kept (a source that says "unchanged" first)
		return nil, fmt.Errorf("no policy bundle fetched at start-up, and no last good bundle in %s", s.state.Dir)
	}
	s.info.WithLabelValues(s.running.Manifest.Revision).Set(1)
	s.log.Info("policy bundle active", "revision", s.running.Manifest.Revision, "hash", s.running.Hash)
	return s.running, nil
}

// next fetches and checks a bundle: nil, nil, nil when nothing changed.
func (s *bundleSource) next(ctx context.Context) (*bundle.Bundle, []byte, error) {
	data, err := s.fetch.Fetch(ctx)
	s.mu.Lock()
	s.lastFetch = time.Now()
	s.mu.Unlock()
	if err != nil {
		s.fetches.WithLabelValues("error").Inc()
		return nil, nil, &refusal{reason: "fetch", err: fmt.Errorf("fetch: %w", err)}
	}
	if data == nil || (s.running != nil && bundle.Hash(data) == s.running.Hash) {
		s.fetches.WithLabelValues("unchanged").Inc()
		return nil, nil, nil
	}
	s.fetches.WithLabelValues("new").Inc()
	b, err := s.check(ctx, data)
	return b, data, err
}

// check runs every step before the swap: signature, chain, version, compile, tests.
func (s *bundleSource) check(ctx context.Context, data []byte) (*bundle.Bundle, error) {
	b, err := bundle.Read(data, s.key)
	if err != nil {
		reason := "malformed"
		for r, e := range map[string]error{"unsigned": bundle.ErrUnsigned, "signature": bundle.ErrSignature, "tampered": bundle.ErrTampered} {
			if errors.Is(err, e) {
				reason = r
			}
		}
		return nil, &refusal{reason: reason, err: err}
	}
	rev := b.Manifest.Revision
	if s.shadowFailed[b.Signed] {
		return nil, refuse("shadow", "revision %s (%s) was refused by its shadow run here before: publish a new revision", rev, b.Hash)
	}
	if r := s.running; r != nil {
		switch {
		case b.Signed == r.Signed:
			return nil, nil // the running bundle, encoded otherwise: nothing changed
		case s.state.Known(b.Hash) || s.state.Known(b.Signed):
			// by what was signed, not by the archive's bytes: an old bundle re-gzipped,
			// or with bytes after its end, is still the old bundle
			return nil, refuse("chain", "revision %s (%s) ran here before: the history only moves forward; roll back by publishing the older policies as a new revision", rev, b.Hash)
		case b.Manifest.Previous != r.Hash && !s.state.Known(b.Manifest.Previous):
			return nil, refuse("chain", "broken chain: revision %s replaces %s, which is neither the running bundle (revision %s, %s) nor one it ran before",
				rev, cmp.Or(b.Manifest.Previous, "nothing"), r.Manifest.Revision, r.Hash)
		}
	}
	if err := b.Manifest.Supports(s.version); err != nil {
		return nil, &refusal{reason: "version", err: err}
	}
	opts := s.test
	opts.Dir, opts.FS, opts.Revision, opts.PoolSize = "", b.FS(), rev, 1
	opts.Logger = slog.New(slog.DiscardHandler)
	tg, err := gate.Load(ctx, opts)
	if err != nil {
		return nil, refuse("compile", "revision %s does not compile: %w", rev, err)
	}
	defer tg.Close()
	if err := s.runTests(ctx, tg, b); err != nil {
		return nil, refuse("tests", "revision %s fails its own tests: %w", rev, err)
	}
	return b, nil
}

// runTests runs every test of the bundle's *_test.js against its policies, as
// mcpgate test does; the first that does not pass is the error.
func (s *bundleSource) runTests(ctx context.Context, tg *gate.Gate, b *bundle.Bundle) error {
	runner, err := fixture.New(fixture.Options{Gate: tg, Analyzer: s.test.Analyzer, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	var names []string
	for n := range b.Files {
		if gate.IsTestFile(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		tf, err := policytest.Compile(n, b.Files[n])
		if err != nil {
			return err
		}
		for _, test := range tf.Tests {
			if res := policytest.Run(ctx, tg, tf, test, runner.Host()); res.Outcome != policytest.Pass {
				return fmt.Errorf("%s:%d: %s: %s", n, res.Line, test, res.Outcome)
			}
		}
	}
	return nil
}

// failed records a refusal: logged, counted by reason, kept for /api/status.
func (s *bundleSource) failed(err error) {
	reason := "state"
	var r *refusal
	if errors.As(err, &r) {
		reason = r.reason
	}
	s.refused.WithLabelValues(reason).Inc()
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
	running := ""
	if s.running != nil {
		running = s.running.Manifest.Revision
	}
	s.log.Error("policy bundle refused; keeping the running policy set", "reason", reason, "running_revision", running, "error", err.Error())
}

// poll fetches every Poll (±20%) until ctx ends, and activates what passes.
func (s *bundleSource) poll(ctx context.Context, g *gate.Gate) {
	for {
		wait := time.Duration(float64(s.cfg.Poll) * (0.8 + 0.4*rand.Float64()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-s.kick:
		}
		if err := s.step(ctx, g); err != nil && ctx.Err() == nil {
			s.failed(err)
		}
	}
}

// fetchNow makes poll fetch at once (SIGHUP).
func (s *bundleSource) fetchNow() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// step fetches once and swaps in a new bundle that passes every check.
func (s *bundleSource) step(ctx context.Context, g *gate.Gate) error {
	b, data, err := s.next(ctx)
	if err != nil || b == nil {
		return err
	}
	if s.cfg.Shadow > 0 && s.pipe != nil && s.running != nil {
		if err := s.shadowRun(ctx, b); err != nil {
			return err
		}
	}
	if err := g.Swap(b.FS(), b.Manifest.Revision); err != nil {
		return &refusal{reason: "compile", err: err}
	}
	s.mu.Lock()
	prev := s.running
	s.running, s.lastErr = b, ""
	s.mu.Unlock()
	s.info.Reset()
	s.info.WithLabelValues(b.Manifest.Revision).Set(1)
	s.log.Info("policy bundle activated", "revision", b.Manifest.Revision, "hash", b.Hash, "previous_revision", prev.Manifest.Revision)
	if err := s.state.Save(data, b); err != nil {
		return fmt.Errorf("--bundle-state: revision %s is active but not kept for a restart: %w", b.Manifest.Revision, err)
	}
	return nil
}

// BundleStatus is /api/status's policy_bundle object.
type BundleStatus struct {
	Source    string    `json:"source"`
	Revision  string    `json:"revision"`
	Hash      string    `json:"hash"`
	Previous  string    `json:"previous,omitempty"`
	LastFetch time.Time `json:"last_fetch"`
	LastError string    `json:"last_error,omitempty"` // the last refusal since the last activation
	// Shadow is the revision running as the shadow of live calls (--bundle-shadow)
	// before its swap; nil when none is.
	Shadow *BundleShadowStatus `json:"shadow,omitempty"`
}

// BundleShadowStatus is a revision's shadow run under way.
type BundleShadowStatus struct {
	Revision string    `json:"revision"`
	Hash     string    `json:"hash"`
	Started  time.Time `json:"started"`
	Ends     time.Time `json:"ends"`
	Calls    int64     `json:"calls"`    // live calls both sets judged so far
	Accepted int64     `json:"accepted"` // of them, blocks that differ by a policy the manifest accepts
}

func (s *bundleSource) status() BundleStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := BundleStatus{Source: logging.StripUserinfo(s.cfg.Source), Revision: s.running.Manifest.Revision, Hash: s.running.Hash,
		Previous: s.running.Manifest.Previous, LastFetch: s.lastFetch, LastError: s.lastErr}
	if t := s.trial; t != nil {
		st.Shadow = &BundleShadowStatus{Revision: t.revision, Hash: t.hash, Started: t.started, Ends: t.ends,
			Calls: t.calls.Load(), Accepted: t.accepted.Load()}
	}
	return st
}

func (s *bundleSource) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.fetches, s.refused, s.info, s.lastFetchGauge}
}

// trialStatus is a shadow run under way, for /api/status.
type trialStatus struct {
	revision, hash  string
	started, ends   time.Time
	calls, accepted atomic.Int64
}

// shadowRun runs b as the shadow of live calls for cfg.Shadow
// (docs/decisions.md#bundle-shadow). It refuses b (reason shadow) at the first call
// where one set blocked or rejected it and the other did not, by a policy b's
// manifest does not accept; with none in the window, b may go live.
func (s *bundleSource) shadowRun(ctx context.Context, b *bundle.Bundle) error {
	rev := b.Manifest.Revision
	opts := s.test
	opts.Dir, opts.FS, opts.Revision = "", b.FS(), rev
	opts.Logger = s.log.With("shadow", true, "shadow_revision", rev)
	tg, err := gate.Load(ctx, opts)
	if err != nil {
		return refuse("compile", "revision %s does not compile: %w", rev, err)
	}
	t := &trialStatus{revision: rev, hash: b.Hash, started: time.Now()}
	t.ends = t.started.Add(s.cfg.Shadow)
	found := make(chan string, 1)
	s.mu.Lock()
	s.trial = t
	s.mu.Unlock()
	s.log.Info("policy bundle running as the shadow of live calls before its swap", "revision", rev, "hash", b.Hash, "for", s.cfg.Shadow.String())
	var over atomic.Bool // the run is decided: a later call's decision counts for nothing
	s.pipe.StartTrial(&pipeline.Trial{Set: tg.Current(), Observe: func(d pipeline.TrialDecision) {
		if over.Load() {
			return
		}
		t.calls.Add(1)
		why, differs := shadowDiffers(d)
		switch {
		case !differs:
		case slices.Contains(b.Manifest.AcceptDifferences, why.policy):
			t.accepted.Add(1)
		default:
			select {
			case found <- why.String():
			default:
			}
		}
	}})
	timer := time.NewTimer(s.cfg.Shadow)
	defer timer.Stop()
	var why string
	select {
	case <-ctx.Done():
	case <-timer.C:
	case why = <-found:
	}
	// The calls still on the candidate are waited for as long again as the window at
	// most: one whose upstream does not answer must not hold the poll (and every later
	// revision) up; the candidate's gate closes once the last of them ends.
	drained := s.pipe.EndTrial()
	grace := time.NewTimer(s.cfg.Shadow)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C:
	case <-ctx.Done():
	}
	over.Store(true)
	go func() {
		<-drained
		tg.Close()
	}()
	s.mu.Lock()
	s.trial = nil
	s.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if why == "" {
		select {
		case why = <-found: // a difference seen as the window closed
		default:
		}
	}
	if why != "" {
		s.shadowFailed[b.Signed] = true
		return refuse("shadow", "revision %s differs from the running set on live traffic: %s (accept a policy's differences with mcpgate bundle build --accept-diff POLICY)", rev, why)
	}
	s.log.Info("policy bundle shadow run passed", "revision", rev, "calls", t.calls.Load(), "accepted_differences", t.accepted.Load())
	return nil
}

// shadowDifference is one call whose block or rejection only one set made.
type shadowDifference struct {
	tool, eventID string
	policy        string // the policy file behind the block
	candidate     bool   // the candidate blocked; else the running set did
}

func (d shadowDifference) String() string {
	if d.candidate {
		return fmt.Sprintf("%s blocks a call of %s the running set let through (event %s)", d.policy, d.tool, d.eventID)
	}
	return fmt.Sprintf("a call of %s the running set's %s blocks goes through (event %s)", d.tool, d.policy, d.eventID)
}

// shadowDiffers reports whether exactly one of the sets blocked or rejected the call
// by a policy. The two sets share the rules, checks and guardrails, so a block
// naming no policy (a rule's, a check's) is the same on both sides or none of the
// candidate's doing.
func shadowDiffers(d pipeline.TrialDecision) (shadowDifference, bool) {
	live, cand := d.Live == vocab.Block, d.Shadow.ActionTaken == vocab.Block
	switch {
	case cand && !live && d.Shadow.Policy != "":
		return shadowDifference{tool: d.Tool, eventID: d.EventID, policy: d.Shadow.Policy, candidate: true}, true
	case live && !cand && d.LivePolicy != "":
		return shadowDifference{tool: d.Tool, eventID: d.EventID, policy: d.LivePolicy}, true
	}
	return shadowDifference{}, false
}
