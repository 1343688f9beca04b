package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/config"
)

// The deployment artefacts: licence files, the systemd unit, the launchd plist, the
// Containerfile, the Helm chart, the release archives and the image. The static
// checks always run; the ones that build (a release archive, the image with podman
// or buildah, the chart with helm) run under make deploy-check, which sets
// MCPGATE_DEPLOY_CHECK=1 and installs helm (docs/deploy.md#checks).

const repoRoot = "../.."

func readRepo(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLicenceFiles: LICENSE is the Apache License 2.0 text as the ASF publishes it,
// the README names it in an SPDX line, and NOTICE carries the gitleaks MIT licence
// word for word (the copy the engine's gitleaks excerpt ships with).
func TestLicenceFiles(t *testing.T) {
	sum := sha256.Sum256(readRepo(t, "LICENSE"))
	// sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt
	if got := hex.EncodeToString(sum[:]); got != "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30" {
		t.Errorf("LICENSE is not the Apache-2.0 text: sha256 %s", got)
	}
	if !bytes.Contains(readRepo(t, "README.md"), []byte("\nSPDX-License-Identifier: Apache-2.0\n")) {
		t.Error("README.md has no SPDX-License-Identifier: Apache-2.0 line")
	}
	notice := readRepo(t, "NOTICE")
	for _, w := range [][]byte{readRepo(t, "testdata/engine/gitleaks/LICENSE"), []byte("github.com/zricethezav/gitleaks/v8"), []byte("Copyright (c) 2019 Zachary Rice")} {
		if !bytes.Contains(notice, w) {
			t.Errorf("NOTICE lacks %q", w)
		}
	}
}

// checkGatewayArgs fails unless argv is a gateway run command line whose every flag
// exists, takes the value given, and passes the checks that need no file, with
// --listen, --config, --policies and --filter-output (a service's command line).
func checkGatewayArgs(t *testing.T, where string, argv []string) {
	t.Helper()
	checkGatewayFlags(t, where, argv, "listen", "config", "policies", "filter-output")
}

// checkGatewayFlags is checkGatewayArgs with the flags that must be set; an upstream
// command after -- is allowed.
func checkGatewayFlags(t *testing.T, where string, argv []string, needs ...string) {
	t.Helper()
	if i := slices.Index(argv, "--"); i >= 0 {
		if i == len(argv)-1 {
			t.Fatalf("%s: nothing after --", where)
		}
		argv = argv[:i]
	}
	if len(argv) < 2 || argv[0] != "gateway" || argv[1] != "run" {
		t.Fatalf("%s: %q is not gateway run", where, argv)
	}
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	cmd, rest, err := root.Find(argv)
	if err != nil || cmd.Name() != "run" {
		t.Fatalf("%s: %v", where, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if cmd.Flags().NArg() > 0 {
		t.Fatalf("%s: stray arguments %q", where, cmd.Flags().Args())
	}
	for _, need := range needs {
		if !cmd.Flags().Changed(need) {
			t.Errorf("%s: no --%s", where, need)
		}
	}
	for name, ok := range map[string][]string{"fail-mode": {"open", "closed"}, "log-format": {"auto", "text", "json"}, "pins-mode": {"warn", "block", "off"}} {
		if v, _ := cmd.Flags().GetString(name); !slices.Contains(ok, v) {
			t.Errorf("%s: --%s %q", where, name, v)
		}
	}
}

// unitFile reads a systemd unit: key → values, continuation lines joined.
func unitFile(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	var cont strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasSuffix(line, "\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		line = cont.String() + line
		cont.Reset()
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q", line)
		}
		keys[k] = append(keys[k], v)
	}
	return keys
}

// TestSystemdUnit: the unit runs gateway run --listen with real flags, keeps its
// state and logs in the directories systemd makes for a dynamic user, carries the
// hardening, and passes systemd-analyze verify where systemd is installed.
func TestSystemdUnit(t *testing.T) {
	src := readRepo(t, "deploy/mcpgate.service")
	keys := unitFile(t, src)
	for k, want := range map[string]string{
		"DynamicUser": "yes", "ProtectSystem": "strict", "StateDirectory": "mcpgate", "LogsDirectory": "mcpgate",
		"NoNewPrivileges": "yes", "ProtectHome": "yes", "PrivateTmp": "yes", "CapabilityBoundingSet": "", "Restart": "on-failure",
	} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	exec0 := strings.Fields(keys["ExecStart"][0])
	if exec0[0] != "/usr/local/bin/mcpgate" {
		t.Errorf("ExecStart runs %s, want the make install path", exec0[0])
	}
	checkGatewayArgs(t, "ExecStart", exec0[1:])
	line := strings.Join(exec0, " ")
	for _, w := range []string{"--audit-db %S/mcpgate/", "--audit-file %L/mcpgate/"} {
		if !strings.Contains(line, w) {
			t.Errorf("ExecStart lacks %q (StateDirectory, LogsDirectory)", w)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed")
		}
		t.Skip("systemd-analyze is not installed: verify skipped")
	}
	// verify wants the binary to exist: point ExecStart at this test binary.
	self, _ := os.Executable()
	dir := t.TempDir()
	unit := filepath.Join(dir, "mcpgate.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(src, []byte("/usr/local/bin/mcpgate"), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestLaunchdPlist: the plist is well-formed XML whose ProgramArguments run gateway
// run with real flags, with absolute paths only (launchd expands neither ~ nor $HOME)
// and logs under the user's ~/Library/Logs, which needs no sudo.
func TestLaunchdPlist(t *testing.T) {
	src := readRepo(t, "deploy/com.example.mcpgate.plist")
	dec := xml.NewDecoder(bytes.NewReader(src))
	var args []string
	var key string
	inArgs := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "key":
				var k string
				_ = dec.DecodeElement(&k, &el)
				key = k
			case "array":
				inArgs = key == "ProgramArguments"
			case "string":
				var s string
				_ = dec.DecodeElement(&s, &el)
				if inArgs {
					args = append(args, s)
				}
				if strings.HasPrefix(s, "~") || strings.Contains(s, "$HOME") {
					t.Errorf("plist value %q is not absolute", s)
				}
			}
		case xml.EndElement:
			if el.Name.Local == "array" {
				inArgs = false
			}
		}
	}
	if len(args) < 3 || args[0] != "/usr/local/bin/mcpgate" {
		t.Fatalf("ProgramArguments %q", args)
	}
	checkGatewayArgs(t, "ProgramArguments", args[1:])
	if !bytes.Contains(src, []byte("<string>/Users/me/Library/Logs/mcpgate/")) {
		t.Error("plist does not log under ~/Library/Logs/mcpgate")
	}
}

// containerfile reads the instructions of the Containerfile: instruction → arguments.
func containerfile(t *testing.T) map[string][]string {
	t.Helper()
	ins := map[string][]string{}
	var cont strings.Builder
	for _, line := range strings.Split(string(readRepo(t, "Containerfile")), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, "\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		line = cont.String() + line
		cont.Reset()
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		ins[strings.ToUpper(k)] = append(ins[strings.ToUpper(k)], strings.TrimSpace(v))
	}
	return ins
}

// TestContainerfile: FROM scratch with no RUN step (it builds without a container
// runtime), a numeric non-root USER (scratch has no /etc/passwd), the binary as
// ENTRYPOINT and a default command of real flags; the image's config.json loads once
// its variables are set and names the missing one otherwise.
func TestContainerfile(t *testing.T) {
	ins := containerfile(t)
	if got := ins["FROM"]; len(got) != 1 || got[0] != "scratch" {
		t.Errorf("FROM %q, want scratch", got)
	}
	if len(ins["RUN"]) > 0 {
		t.Errorf("RUN %q: the image must build without running a container", ins["RUN"])
	}
	if got := ins["USER"]; len(got) != 1 || got[0] != "65532:65532" {
		t.Errorf("USER %q, want 65532:65532", got)
	}
	var entry, cmd []string
	if err := json.Unmarshal([]byte(ins["ENTRYPOINT"][0]), &entry); err != nil || !slices.Equal(entry, []string{"/usr/local/bin/mcpgate"}) {
		t.Errorf("ENTRYPOINT %q: %v", ins["ENTRYPOINT"], err)
	}
	if err := json.Unmarshal([]byte(ins["CMD"][0]), &cmd); err != nil {
		t.Fatalf("CMD %q: %v", ins["CMD"], err)
	}
	checkGatewayArgs(t, "CMD", cmd)
	if !slices.Contains(cmd, "/etc/mcpgate/config.json") || !slices.Contains(cmd, "/etc/mcpgate/policies") {
		t.Errorf("CMD %q does not read /etc/mcpgate", cmd)
	}

	img := readRepo(t, "deploy/image/config.json")
	env := map[string]string{"MCPGATE_TOKEN_SHA256": strings.Repeat("ab", 32)}
	c, err := config.ParseEnv(img, func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err != nil || len(c.Gate.Tokens) != 1 || c.Gate.Tokens[0].UserID != "agent" {
		t.Fatalf("image config.json: %v %+v", err, c)
	}
	if _, err := config.ParseEnv(img, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "MCPGATE_TOKEN_SHA256 is not set") {
		t.Errorf("image config.json without its variable: %v", err)
	}
}

// TestChartShipsThePolicies: the chart's copy of the shipped policies is the shipped
// set, so the two cannot drift apart.
func TestChartShipsThePolicies(t *testing.T) {
	shipped, _ := filepath.Glob(filepath.Join(repoRoot, "policies", "*.js"))
	copies, _ := filepath.Glob(filepath.Join(repoRoot, "deploy/helm/mcpgate/files/policies", "*.js"))
	var want []string
	for _, p := range shipped {
		if !gate.IsTestFile(filepath.Base(p)) {
			want = append(want, filepath.Base(p))
		}
	}
	var got []string
	for _, p := range copies {
		got = append(got, filepath.Base(p))
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(filepath.Join(repoRoot, "policies", filepath.Base(p)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from policies/%s", p, filepath.Base(p))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("chart policies %q, shipped %q", got, want)
	}
}

// deployCheck skips t unless make deploy-check runs it.
func deployCheck(t *testing.T) {
	t.Helper()
	if os.Getenv("MCPGATE_DEPLOY_CHECK") == "" {
		t.Skip("builds release archives, the image and the chart: make deploy-check")
	}
}

const (
	testVersion = "v0.0.0-check"
	testCommit  = "0123456789ab"
)

var release struct {
	once    sync.Once
	dist    string
	epoch   int64
	out     string
	err     error
	archive string // linux/GOARCH archive file name
}

// buildRelease runs scripts/release.sh once for linux/GOARCH.
func buildRelease(t *testing.T) string {
	t.Helper()
	release.once.Do(func() {
		release.dist, release.err = os.MkdirTemp("", "mcpgate-dist-")
		if release.err != nil {
			return
		}
		release.epoch = 1767225600 // 2026-01-01T00:00:00Z
		release.archive = "mcpgate_" + testVersion + "_linux_" + runtime.GOARCH + ".tar.gz"
		release.out, release.err = runRelease(release.dist, release.epoch)
	})
	if release.err != nil {
		t.Fatalf("release.sh: %v\n%s", release.err, release.out)
	}
	return release.dist
}

func runRelease(dist string, epoch int64) (string, error) {
	cmd := exec.Command("bash", "scripts/release.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "VERSION="+testVersion, "COMMIT="+testCommit, "DIST="+dist,
		"RELEASE_PLATFORMS=linux/"+runtime.GOARCH, "SOURCE_DATE_EPOCH="+strconv.FormatInt(epoch, 10))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// archiveFiles reads a .tar.gz: name → header and contents.
func archiveFiles(t *testing.T, path string) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, zr)
}

func readTar(t *testing.T, r io.Reader) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(r)
	var hdrs []*tar.Header
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs, files
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// runBinary writes b to a file and runs it with args.
func runBinary(t *testing.T, b []byte, args ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcpgate")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", p, args, err, out)
	}
	return string(out)
}

// TestDeployRelease: two release builds of one commit are byte for byte the same;
// SHA256SUMS names each archive's sha256; entries are sorted, owned by 0:0, dated
// SOURCE_DATE_EPOCH; the binary inside is stamped with VERSION and COMMIT.
func TestDeployRelease(t *testing.T) {
	deployCheck(t)
	dist := buildRelease(t)
	again := t.TempDir()
	if out, err := runRelease(again, release.epoch); err != nil {
		t.Fatalf("second release.sh: %v\n%s", err, out)
	}
	a, b := readRepoAbs(t, filepath.Join(dist, release.archive)), readRepoAbs(t, filepath.Join(again, release.archive))
	if !bytes.Equal(a, b) {
		t.Fatalf("two builds differ: %s %s", sha256hex(a), sha256hex(b))
	}
	if sums := string(readRepoAbs(t, filepath.Join(dist, "SHA256SUMS"))); sums != sha256hex(a)+"  "+release.archive+"\n" {
		t.Errorf("SHA256SUMS %q", sums)
	}
	hdrs, files := archiveFiles(t, filepath.Join(dist, release.archive))
	var names []string
	for _, h := range hdrs {
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != release.epoch {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %q", names)
	}
	top := strings.TrimSuffix(release.archive, ".tar.gz") + "/"
	for _, want := range []string{"mcpgate", "LICENSE", "NOTICE", "README.md", "policies/redact-email.js", "policies/examples/block-force-delete.js", "deploy/mcpgate.service"} {
		if files[top+want] == nil {
			t.Errorf("archive lacks %s", want)
		}
	}
	// README.md's links into docs/ resolve inside the archive.
	for _, m := range regexp.MustCompile(`\]\((docs/[A-Za-z0-9_.-]+\.md)`).FindAllStringSubmatch(string(readRepo(t, "README.md")), -1) {
		if files[top+m[1]] == nil {
			t.Errorf("README.md links %s, which the archive lacks", m[1])
		}
	}
	if got, want := runBinary(t, files[top+"mcpgate"], "--version"), "mcpgate version "+testVersion+" (commit "+testCommit+")\n"; got != want {
		t.Errorf("--version %q, want %q", got, want)
	}
}

func readRepoAbs(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeployImage: make image's image runs the release binary (the same bytes, so the
// same --version) as uid 65532 from ENTRYPOINT, ships the policies under
// /etc/mcpgate/policies and the config at /etc/mcpgate/config.json, and gives
// /var/lib/mcpgate to its user. Containers cannot run here, so the image is saved and
// its layers read.
func TestDeployImage(t *testing.T) {
	deployCheck(t)
	dist := buildRelease(t)
	tool, err := exec.LookPath("podman")
	if err != nil {
		if tool, err = exec.LookPath("buildah"); err != nil {
			t.Fatal("neither podman nor buildah is installed (apt-get install podman)")
		}
	}
	image := "localhost/mcpgate-check:" + testVersion
	cmd := exec.Command("bash", "scripts/image.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "VERSION="+testVersion, "COMMIT="+testCommit, "DIST="+dist, "IMAGE="+image,
		"SOURCE_DATE_EPOCH="+strconv.FormatInt(release.epoch, 10))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(tool, "rmi", "-f", image).Run() })

	out, err := exec.Command(tool, "inspect", "--type", "image", image).Output()
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	var insp []struct {
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
			WorkingDir string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal(out, &insp); err != nil || len(insp) != 1 {
		t.Fatalf("inspect: %v %s", err, out)
	}
	c := insp[0].Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/mcpgate"}) || c.WorkingDir != "/var/lib/mcpgate" {
		t.Errorf("config: user %q entrypoint %q workdir %q", c.User, c.Entrypoint, c.WorkingDir)
	}
	checkGatewayArgs(t, "image Cmd", c.Cmd)
	if c.Labels["org.opencontainers.image.version"] != testVersion || c.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("labels %v", c.Labels)
	}

	// The image's file system, from a docker-archive: manifest.json names the layers.
	saved := filepath.Join(t.TempDir(), "image.tar")
	save := exec.Command(tool, "push", image, "docker-archive:"+saved)
	if filepath.Base(tool) == "podman" {
		save = exec.Command(tool, "save", "--format", "docker-archive", "-o", saved, image)
	}
	if out, err := save.CombinedOutput(); err != nil {
		t.Fatalf("save: %v\n%s", err, out)
	}
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, outer := readTar(t, f)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(outer["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v", err)
	}
	fsys := map[string]*tar.Header{}
	files := map[string][]byte{}
	for _, l := range manifest[0].Layers {
		hdrs, fs := readTar(t, bytes.NewReader(outer[l]))
		for _, h := range hdrs {
			fsys[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = h
		}
		for n, b := range fs {
			files[strings.TrimPrefix(n, "./")] = b
		}
	}
	_, rel := archiveFiles(t, filepath.Join(dist, release.archive))
	built := rel[strings.TrimSuffix(release.archive, ".tar.gz")+"/mcpgate"]
	bin := files["usr/local/bin/mcpgate"]
	if bin == nil || sha256hex(bin) != sha256hex(built) {
		t.Fatalf("the image's binary is not the release build (%d bytes)", len(bin))
	}
	if got, want := runBinary(t, bin, "--version"), "mcpgate version "+testVersion+" (commit "+testCommit+")\n"; got != want {
		t.Errorf("image --version %q, want %q", got, want)
	}
	if h := fsys["usr/local/bin/mcpgate"]; h.Mode&0o111 == 0 {
		t.Errorf("binary mode %o", h.Mode)
	}
	if h := fsys["var/lib/mcpgate"]; h == nil || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("/var/lib/mcpgate: %+v", h)
	}
	if h := fsys["var/lib"]; h != nil && h.Uid != 0 {
		t.Errorf("/var/lib owned by %d", h.Uid)
	}
	if !bytes.Equal(files["etc/mcpgate/policies/redact-email.js"], readRepo(t, "policies/redact-email.js")) {
		t.Error("the image lacks the shipped policies")
	}
	if !bytes.Equal(files["etc/mcpgate/config.json"], readRepo(t, "deploy/image/config.json")) {
		t.Error("the image lacks /etc/mcpgate/config.json")
	}
}

// helm returns the helm binary make deploy-check installed (HELM) or one on PATH.
func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("helm is not installed: make deploy-check installs it")
	}
	return h
}

// TestDeployChart: helm lint passes; helm template renders two replicas behind a
// ClusterIP service without session affinity, probes on the admin port that pass
// the admin listener's Host check, a non-root read-only container, gateway run
// flags that exist, a config.json that loads and policies that compile; without
// tokens, the render fails saying which value is missing.
func TestDeployChart(t *testing.T) {
	deployCheck(t)
	h := helm(t)
	chart := filepath.Join(repoRoot, "deploy/helm/mcpgate")
	values := filepath.Join(chart, "ci/test-values.yaml")
	if out, err := exec.Command(h, "lint", "--strict", chart, "-f", values).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	out, err := exec.Command(h, "template", "gw", chart, "-f", values, "--namespace", "tools").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	type probe struct {
		HTTPGet struct {
			Path        string
			Port        string
			HTTPHeaders []struct{ Name, Value string } `yaml:"httpHeaders"`
		} `yaml:"httpGet"`
	}
	var (
		deploy struct {
			Spec struct {
				Replicas int
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsNonRoot bool  `yaml:"runAsNonRoot"`
							RunAsUser    int64 `yaml:"runAsUser"`
						} `yaml:"securityContext"`
						Containers []struct {
							Args  []string
							Ports []struct {
								Name          string
								ContainerPort int `yaml:"containerPort"`
							}
							ReadinessProbe  *probe `yaml:"readinessProbe"`
							LivenessProbe   *probe `yaml:"livenessProbe"`
							SecurityContext struct {
								ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
							} `yaml:"securityContext"`
						}
					}
				}
			}
		}
		service struct {
			Spec struct {
				Type                  string
				SessionAffinity       string `yaml:"sessionAffinity"`
				SessionAffinityConfig struct {
					ClientIP struct {
						TimeoutSeconds int `yaml:"timeoutSeconds"`
					} `yaml:"clientIP"`
				} `yaml:"sessionAffinityConfig"`
				Ports []struct{ Name string }
			}
		}
		configMaps = map[string]map[string]string{}
		kinds      []string
	)
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		var head struct {
			Kind     string
			Metadata struct{ Name string }
			Data     map[string]string
		}
		if err := doc.Decode(&head); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, head.Kind)
		switch head.Kind {
		case "Deployment":
			err = doc.Decode(&deploy)
		case "Service":
			err = doc.Decode(&service)
		case "ConfigMap":
			configMaps[strings.TrimPrefix(head.Metadata.Name, "gw-mcpgate-")] = head.Data
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"ConfigMap", "ConfigMap", "Deployment", "Secret", "Service"}) {
		t.Errorf("kinds %q", kinds)
	}
	spec := deploy.Spec.Template.Spec
	if deploy.Spec.Replicas != 2 || len(spec.Containers) != 1 {
		t.Fatalf("replicas %d, containers %d", deploy.Spec.Replicas, len(spec.Containers))
	}
	ctr := spec.Containers[0]
	if !spec.SecurityContext.RunAsNonRoot || spec.SecurityContext.RunAsUser != 65532 || !ctr.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("security context %+v %+v", spec.SecurityContext, ctr.SecurityContext)
	}
	// The default keeps a 2025-11-25 session (the v1 SDK) on the replica that holds it.
	if service.Spec.Type != "ClusterIP" || service.Spec.SessionAffinity != "ClientIP" || service.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds <= 0 {
		t.Errorf("service %+v: want ClusterIP with ClientIP affinity so 2025-11-25 sessions stay on their replica", service.Spec)
	}
	for name, p := range map[string]*probe{"readiness": ctr.ReadinessProbe, "liveness": ctr.LivenessProbe} {
		if p == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != "admin" || len(p.HTTPGet.HTTPHeaders) != 1 || p.HTTPGet.HTTPHeaders[0].Value != "localhost" {
			t.Errorf("%s probe %+v", name, p)
		}
	}
	args := slices.Clone(ctr.Args)
	for i, a := range args {
		if a == "$(POD_NAME)" {
			args[i] = "gw-mcpgate-0"
		}
	}
	checkGatewayArgs(t, "chart args", args)
	for _, w := range []string{"0.0.0.0:9464", "gw-mcpgate,gw-mcpgate.tools.svc,gw-mcpgate.tools.svc.cluster.local"} {
		if !slices.Contains(args, w) {
			t.Errorf("args lack %q: %q", w, args)
		}
	}
	cfg := configMaps["config"]["config.json"]
	if _, err := config.ParseEnv([]byte(cfg), func(n string) (string, bool) { return strings.Repeat("0", 64), n == "MCPGATE_TOKEN_SHA256" }); err != nil {
		t.Errorf("config.json: %v\n%s", err, cfg)
	}
	dir := t.TempDir()
	var pols []string
	for name, src := range configMaps["policies"] {
		pols = append(pols, name)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(pols)
	want := []string{"block-force-delete.js"} // from ci/test-values.yaml
	shipped, _ := filepath.Glob(filepath.Join(repoRoot, "policies", "*.js"))
	for _, p := range shipped {
		if !gate.IsTestFile(filepath.Base(p)) {
			want = append(want, filepath.Base(p))
		}
	}
	slices.Sort(want)
	if !slices.Equal(pols, want) {
		t.Errorf("policies %q, want %q", pols, want)
	}
	g, err := gate.Load(context.Background(), gate.Options{Dir: dir})
	if err != nil {
		t.Fatalf("the chart's policies do not load: %v", err)
	}
	g.Close()

	out, err = exec.Command(h, "template", "gw", chart).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "auth.tokenSHA256") {
		t.Errorf("helm template without tokens: %v\n%s", err, out)
	}
}

// TestReadmeClientExamples: every client configuration in the README that runs
// mcpgate parses, names mcpgate and every path by an absolute path, and passes
// gateway run flags that exist; Cursor, Claude Code and VS Code each have one.
func TestReadmeClientExamples(t *testing.T) {
	readme := string(readRepo(t, "README.md"))
	n := 0
	for _, block := range strings.Split(readme, "```json\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if !strings.Contains(block, "/usr/local/bin/mcpgate") {
			continue
		}
		var doc map[string]map[string]struct {
			Command string
			Args    []string
		}
		if err := json.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("README example does not parse: %v\n%s", err, block)
		}
		for key, servers := range doc {
			for name, s := range servers {
				where := key + "." + name
				if !filepath.IsAbs(s.Command) {
					t.Errorf("%s: command %q is not absolute", where, s.Command)
				}
				checkGatewayFlags(t, where, s.Args, "policies")
				for i, a := range s.Args {
					if i > 0 && strings.HasPrefix(s.Args[i-1], "--") && strings.Contains(a, "/") && !filepath.IsAbs(a) {
						t.Errorf("%s: %s %q is not absolute", where, s.Args[i-1], a)
					}
				}
				n++
			}
		}
	}
	if n < 3 {
		t.Errorf("%d client examples run mcpgate, want Claude Desktop/Cursor, Claude Code and VS Code", n)
	}
	for _, w := range []string{"~/.cursor/mcp.json", "`.mcp.json`", ".vscode/mcp.json"} {
		if !strings.Contains(readme, w) {
			t.Errorf("README does not name %s", w)
		}
	}
}

// TestMakeInstallStripped: make install installs a stripped binary (no symbol table,
// no DWARF), as the release archives carry, with the shipped policies beside it.
func TestMakeInstallStripped(t *testing.T) {
	deployCheck(t)
	dest := t.TempDir()
	cmd := exec.Command("make", "-C", repoRoot, "install", "DESTDIR="+dest, "PREFIX=/usr", "BIN="+filepath.Join(t.TempDir(), "mcpgate"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	f, err := elf.Open(filepath.Join(dest, "usr/bin/mcpgate"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, sec := range []string{".symtab", ".debug_info", ".zdebug_info"} {
		if f.Section(sec) != nil {
			t.Errorf("installed binary has %s: not stripped", sec)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "usr/share/mcpgate/policies/redact-email.js")); err != nil {
		t.Error(err)
	}
}
