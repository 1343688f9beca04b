package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagUsagesHaveNoBackquotes: pflag takes a `quoted` word of a flag's usage as
// the flag's value name, so "--pins-mode `mcpgate pins approve`" would print as the
// flag's argument. Usages quote with double quotes, or not at all.
func TestFlagUsagesHaveNoBackquotes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage has a backquote: %q", c.CommandPath(), f.Name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(strings.NewReader(""), io.Discard, io.Discard))
}

// TestPinsApproveArgsTeach: with one upstream after --, the server name is "", and a
// user who gives only the tool is told so.
func TestPinsApproveArgsTeach(t *testing.T) {
	for _, args := range [][]string{{"read_file"}, {}, {"a", "b", "c"}} {
		var out, errb bytes.Buffer
		argv := append([]string{"pins", "approve", "--file", filepath.Join(t.TempDir(), "pins.json")}, args...)
		if code := run(context.Background(), argv, nil, &out, &errb); code != exitError {
			t.Fatalf("%q: exit %d, want %d", args, code, exitError)
		}
		if msg := errb.String(); !strings.Contains(msg, "want SERVER TOOL") || !strings.Contains(msg, `SERVER is ""`) {
			t.Fatalf("%q: %s", args, msg)
		}
	}
}

// TestPinsListSaysWhenThereIsNoFile: a mistyped --file gives an empty table and a
// note on stderr naming the path, not an empty table alone.
func TestPinsListSaysWhenThereIsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"pins", "list", "--file", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "no pin file at "+path) || !strings.HasPrefix(out.String(), "SERVER") {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestPinsResetNoMatchFails: resetting a server or tool with no pin is an error (exit 1),
// as the help says, so a mistyped name does not pass for success; resetting all is not.
func TestPinsResetNoMatchFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fs"}, exitError, `no pin matches server "fs"`},
		{[]string{"fs", "read_file"}, exitError, `no pin matches server "fs" tool "read_file"`},
		{nil, 0, ""},
	} {
		var out, errb bytes.Buffer
		argv := append([]string{"pins", "reset", "--file", path}, tc.args...)
		if code := run(context.Background(), argv, nil, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("%q: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, errb.String(), tc.want)
		}
	}
}

// TestBuildVersion: -ldflags wins; without it the version comes from the build info
// ("dev", with the VCS revision when the toolchain embedded one) and is never empty.
func TestBuildVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	if got := buildVersion(); got != "v1.2.3" {
		t.Fatalf("with -X main.version: %q", got)
	}
	version = ""
	if got := buildVersion(); !strings.HasPrefix(got, "dev") && !strings.HasPrefix(got, "v") {
		t.Fatalf("without -X main.version: %q", got)
	}
}

// TestStartupLogHoldsNoPassword: a URL flag's user-info reaches neither the
// start-up log nor the error a bad value prints.
func TestStartupLogHoldsNoPassword(t *testing.T) {
	dir := t.TempDir()
	for _, otlp := range []string{"http://alice:s3cret@127.0.0.1:9", "grpc://alice:s3cret@127.0.0.1:9"} {
		var out, errb bytes.Buffer
		argv := []string{"gateway", "run", "--log-format", "json", "--policies", dir, "--audit-otlp", otlp, "--", filepath.Join(dir, "no-such-server")}
		if code := run(context.Background(), argv, nil, &out, &errb); code != exitError {
			t.Fatalf("%s: exit %d, want %d: %s", otlp, code, exitError, errb.String())
		}
		if strings.Contains(errb.String(), "s3cret") || strings.Contains(errb.String(), "alice") {
			t.Errorf("%s: stderr holds the user-info:\n%s", otlp, errb.String())
		}
		if !strings.Contains(errb.String(), "127.0.0.1:9") {
			t.Errorf("%s: stderr does not name the endpoint:\n%s", otlp, errb.String())
		}
	}
}

// TestUnknownCommandExits2: an argument that names no command of a group exits 2
// with "unknown command", a suggestion where one is close, and the group's short
// help on stderr, nothing on stdout; a group alone prints its help and exits 0.
func TestUnknownCommandExits2(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stderr     []string
		stdoutHelp bool
	}{
		{[]string{"gateway", "start"}, exitUnknown, []string{`unknown command "start" for "mcpgate gateway"`, "did you mean run?", "Usage:\n  mcpgate gateway COMMAND", "  run ", "mcpgate gateway --help"}, false},
		{[]string{"start"}, exitUnknown, []string{`unknown command "start" for "mcpgate"`, "  gateway ", "  audit "}, false},
		{[]string{"gatewy", "run"}, exitUnknown, []string{`unknown command "gatewy"`, "did you mean gateway?"}, false},
		{[]string{"pins", "show"}, exitUnknown, []string{`unknown command "show" for "mcpgate pins"`, "  approve "}, false},
		{[]string{"audit", "shwo", "ID"}, exitUnknown, []string{`unknown command "shwo" for "mcpgate audit"`, "did you mean show?", "  show "}, false},
		{[]string{"gateway"}, exitOK, nil, true},
		{[]string{"pins"}, exitOK, nil, true},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errb.String())
			continue
		}
		for _, w := range tc.stderr {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.args, w, errb.String())
			}
		}
		if tc.stdoutHelp != strings.Contains(out.String(), "Usage:") {
			t.Errorf("%q: stdout %q", tc.args, out.String())
		}
	}
}

// TestVersionStamp: the Makefile's -X main.version and -X main.commit both show in
// --version; a version alone shows alone.
func TestVersionStamp(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	for _, tc := range []struct{ version, commit, want string }{
		{"v1.2.0", "0123456789ab", "mcpgate version v1.2.0 (commit 0123456789ab)\n"},
		{"dev", "0123456789ab", "mcpgate version dev (commit 0123456789ab)\n"},
		{"v1.2.0", "", "mcpgate version v1.2.0\n"},
	} {
		version, commit = tc.version, tc.commit
		var out bytes.Buffer
		if code := run(context.Background(), []string{"--version"}, nil, &out, io.Discard); code != 0 || out.String() != tc.want {
			t.Errorf("%q %q: exit %d, %q; want %q", tc.version, tc.commit, code, out.String(), tc.want)
		}
	}
}

// TestGatewayRunHelpTeaches: gateway run --help says what a platform engineer needs
// beyond one stdio server: both revisions and that the gateway translates between
// them, a gateway behind a gateway, and an example each of --listen, --root and
// --config with mcpServers (several servers, their name prefixes, a url server).
func TestGatewayRunHelpTeaches(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"gateway", "run", "--help"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	help := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"2025-11-25 or 2026-07-28", "the gateway translates", "docs/http.md#revisions",
		"may itself be an mcpgate",
		"mcpgate gateway run --listen 127.0.0.1:8080", "--root file:///",
		`{"mcpServers": {"fs": {"command"`, `"roots": [`, `"url": "http://`, "<server>_<tool>", "--config /etc/mcpgate/gateway.json",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("gateway run --help does not say %q", want)
		}
	}
}

// TestMissingPoliciesDirSaysWhatToDo: a --policies directory that does not exist
// stops start-up (exit 1) with the command that makes it and the one that copies the
// shipped set into it; a missing --shadow directory, or a --policies path that is a
// file, gets no such hint (mkdir would not help).
func TestMissingPoliciesDirSaysWhatToDo(t *testing.T) {
	tmp := t.TempDir()
	missing, file := filepath.Join(tmp, "missing"), filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
		hint bool
	}{
		{[]string{"--policies", missing}, []string{"policies directory does not exist: " + missing, "mkdir -p " + missing + " (an empty directory runs no policies)", "/*.js " + missing + "/"}, true},
		{[]string{"--policies", tmp, "--shadow", missing}, []string{"--shadow: gate: policies directory does not exist"}, false},
		{[]string{"--policies", file}, []string{"is not a directory"}, false},
	} {
		var out, errb bytes.Buffer
		argv := append(append([]string{"gateway", "run"}, tc.args...), "--", "true")
		if code := run(context.Background(), argv, strings.NewReader(""), &out, &errb); code != exitError {
			t.Fatalf("%q: exit %d, want %d: %s", tc.args, code, exitError, errb.String())
		}
		msg := errb.String()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: stderr does not say %q: %s", tc.args, w, msg)
			}
		}
		if got := strings.Contains(msg, "cp -n "); got != tc.hint {
			t.Errorf("%q: hint %v, want %v: %s", tc.args, got, tc.hint, msg)
		}
	}
}
