// Package upstream starts an MCP server as a child process and speaks JSON-RPC to it
// over stdio (MCP 2025-11-25, "Transports: stdio"), and keeps a server running: the
// Supervisor restarts it with backoff and replays the session's initialize on the
// new process (docs/servers.md#restarts).
package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// stderrPrefix marks relayed upstream stderr lines (docs/decisions.md#upstream-stderr).
const stderrPrefix = "[upstream] "

// maxStderrLine caps one relayed stderr line; longer lines are cut with a marker.
const maxStderrLine = 16 << 10

// Process is a running upstream MCP server.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // our read end of the child's stdout
	conn   *jsonrpc.Stream
	done   chan struct{}
	err    error // the exit status, valid after done is closed
	closed sync.Once
}

// Options configure Start.
type Options struct {
	Argv []string // the command and its arguments
	// Env are the KEY=VALUE pairs of the server's configured "env"; they are set
	// whatever their name.
	Env []string
	// Inherited are the variables of ours the server gets (EnvPolicy.Environ's kept);
	// nil means the minimal set of EnvPolicy{}.
	Inherited []string
	Stderr    io.Writer // receives "[upstream] " lines; nil drops the upstream's stderr
	// Name is the configured server name; each relayed stderr line then reads
	// "[upstream] NAME: …" so several servers' logs can be told apart.
	Name            string
	MaxMessageBytes int
}

// InheritedEnv are the names of our environment every upstream gets: what finding a
// program, a home directory, a temporary directory, a terminal and the locale takes
// (the TypeScript MCP SDK's default stdio list, plus TMPDIR, TZ and the locale's
// LANG, LANGUAGE and LC_*) (docs/servers.md#environment).
var InheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_*"}

// inheritedWindows are the names a Windows program needs to start at all.
var inheritedWindows = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PROCESSOR_ARCHITECTURE", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "PATHEXT", "COMSPEC"}

// gatewaySecrets are the gateway's own credentials in its environment. A server
// must not read them, even through a Pass pattern: a tool that dumps its
// environment would hand the agent the admin listener's bearer token.
var gatewaySecrets = []string{"MCPGATE_ADMIN_TOKEN"}

// EnvPolicy decides which of the gateway's variables a stdio upstream gets
// (docs/decisions.md#upstream-environment).
type EnvPolicy struct {
	// Inherit hands on all of ours (the command after --, whose launcher's
	// environment is its configured one) except MCPGATE_*, Own, and what looks like a
	// credential by name or value; false hands on InheritedEnv only.
	Inherit bool
	// Pass names more of ours that always pass (NAME, PREFIX* or *; --pass-env),
	// gatewaySecrets excepted.
	Pass []string
	// Own are the names whose values the gateway itself consumed (a ${NAME} of its
	// configuration).
	Own []string
	// SecretValue reports a value the engine's secret rules flag; nil flags none.
	SecretValue func(string) bool
}

// Environ splits ours (KEY=VALUE pairs) into what an upstream gets and the names it
// does not, in ours' order. On Windows names match without regard to case.
func (p EnvPolicy) Environ(ours []string) (kept, dropped []string) {
	patterns := append(slices.Clone(InheritedEnv), p.Pass...)
	if runtime.GOOS == "windows" {
		patterns = append(patterns, inheritedWindows...)
	}
	for _, kv := range ours {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		pass := !slices.ContainsFunc(gatewaySecrets, func(s string) bool { return envNameEqual(s, name) }) &&
			(slices.ContainsFunc(patterns, func(pt string) bool { return envMatch(pt, name) }) ||
				p.Inherit && !envMatch("MCPGATE_*", name) && !slices.ContainsFunc(p.Own, func(o string) bool { return envNameEqual(o, name) }) &&
					!CredentialName(name) && !credentialValue(value, p.SecretValue))
		if pass {
			kept = append(kept, kv)
		} else {
			dropped = append(dropped, name)
		}
	}
	return kept, dropped
}

// credentialWords are the word parts of a name that say it holds a credential
// (HEADERS: OTEL_EXPORTER_OTLP_HEADERS carries an exporter's Authorization);
// credentialEnds are what a part ending says the same by (GITHUBTOKEN, CLIENTSECRET).
var (
	credentialWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "APIKEY", "API_KEY", "PRIVATE_KEY",
		"ACCESS_KEY", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE", "SESSION", "DSN", "HEADERS", "DATABASE_URL", "CONNECTION_STRING"}
	credentialEnds     = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIAL", "CREDENTIALS"}
	credentialPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS"}
)

// CredentialName reports whether an environment variable's name says it holds a
// credential: a word part (split at anything but letters and digits, any case) of
// credentialWords, a part ending in one of credentialEnds, a PWD suffix (PWD and
// OLDPWD themselves are directories), or a cloud credential prefix (AWS_, AZURE_).
// A name ending in CA_BUNDLE (AWS_CA_BUNDLE) is a trust store's path, as SSL_CERT_FILE.
func CredentialName(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasSuffix(n, "CA_BUNDLE") {
		return false
	}
	if strings.HasSuffix(n, "PWD") && n != "PWD" && n != "OLDPWD" {
		return true
	}
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	parts := strings.FieldsFunc(n, func(r rune) bool { return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') })
	joined := "_" + strings.Join(parts, "_") + "_"
	for _, w := range credentialWords {
		if strings.Contains(joined, "_"+w+"_") {
			return true
		}
	}
	for _, part := range parts {
		for _, e := range credentialEnds {
			if strings.HasSuffix(part, e) {
				return true
			}
		}
	}
	return false
}

// credentialValue reports a value that looks like a credential: a URL with
// user-info (https://user:pass@host), or one secret flags.
func credentialValue(v string, secret func(string) bool) bool {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.User != nil {
		return true
	}
	return secret != nil && secret(v)
}

// envMatch reports whether name is pattern, or begins with pattern's part before a
// final '*'.
func envMatch(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return len(name) >= len(prefix) && envNameEqual(name[:len(prefix)], prefix)
	}
	return envNameEqual(pattern, name)
}

func envNameEqual(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// Start launches the upstream. The error names the command when it cannot start.
func Start(opts Options) (*Process, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("upstream: no command given (put it after --)")
	}
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	inherited := opts.Inherited
	if inherited == nil {
		inherited, _ = EnvPolicy{}.Environ(os.Environ())
	}
	cmd.Env = append(slices.Clone(inherited), opts.Env...)
	setProcAttr(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	// Our own pipe, not StdoutPipe: cmd.Wait closes a StdoutPipe as soon as the
	// process exits, which would lose the last messages it wrote and turn the end of
	// its output into "file already closed". This read end is closed by Close.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	cmd.Stdout = stdoutW
	var stderr io.ReadCloser
	if opts.Stderr != nil {
		if stderr, err = cmd.StderrPipe(); err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
	}
	err = cmd.Start()
	_ = stdoutW.Close() // the child holds its own copy
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("upstream: start %q: %w", opts.Argv[0], err)
	}
	p := &Process{
		cmd:    cmd,
		stdin:  stdin,
		stdout: stdout,
		conn:   jsonrpc.NewStream(stdout, stdin, opts.MaxMessageBytes),
		done:   make(chan struct{}),
	}
	var relayed sync.WaitGroup
	if stderr != nil {
		relayed.Add(1)
		go func() {
			defer relayed.Done()
			relayStderr(stderr, opts.Stderr, opts.Name)
		}()
	}
	go func() {
		relayed.Wait() // cmd.Wait closes the pipes; read them out first
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// relayStderr copies the upstream's stderr line by line with the prefix, escape
// sequences and controls removed, so a line can never pass for an audit record.
func relayStderr(r io.Reader, w io.Writer, name string) {
	prefix := stderrPrefix
	if name != "" {
		prefix += engine.Sanitize(name) + ": "
	}
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line) < maxStderrLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 {
			text := engine.Sanitize(string(line))
			for len(text) > 0 && (text[len(text)-1] == '\n' || text[len(text)-1] == '\r') {
				text = text[:len(text)-1]
			}
			if len(line) >= maxStderrLine {
				text += " …[cut]"
			}
			_, _ = io.WriteString(w, prefix+text+"\n")
			line = line[:0]
		}
		if err != nil {
			return
		}
	}
}

// Send writes one message to the upstream's stdin.
func (p *Process) Send(msg *jsonrpc.Message) error {
	if err := p.conn.Send(msg); err != nil {
		return fmt.Errorf("upstream: write: %w", err)
	}
	return nil
}

// Recv returns the next message the upstream wrote to stdout; an oversized or
// malformed line is a *jsonrpc.DropError and the stream goes on (see jsonrpc.Stream).
func (p *Process) Recv() (*jsonrpc.Message, error) { return p.conn.Recv() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is the exit status; valid once Done is closed.
func (p *Process) ExitErr() error { return p.err }

// Close closes stdin (the stdio transport's shutdown signal), waits up to grace for
// the process to exit, then sends SIGTERM, and SIGKILL after another grace.
func (p *Process) Close(ctx context.Context, grace time.Duration) error {
	p.closed.Do(func() { _ = p.stdin.Close() })
	defer p.stdout.Close() // ends a Recv still waiting (a grandchild may hold the pipe)
	for _, sig := range []func(){func() {}, func() { terminate(p.cmd) }, func() { kill(p.cmd) }} {
		sig()
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			kill(p.cmd)
			return ctx.Err()
		case <-t.C:
		}
	}
	<-p.done
	return nil
}
