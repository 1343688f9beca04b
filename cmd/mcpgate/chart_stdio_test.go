package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestCopySelf: copy-self puts this binary, executable, at DIR/mcpgate and makes an
// empty DIR/policies, as the chart's init container needs.
func TestCopySelf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "opt")
	if _, errOut, code := runCLI(t, "copy-self", dir); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(filepath.Join(dir, "mcpgate"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("DIR/mcpgate is not this binary: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "mcpgate")); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", st.Mode())
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "policies")); err != nil || len(ents) != 0 {
		t.Errorf("DIR/policies: %v %v", ents, err)
	}
}

// chartPod is what TestChartStdioServers reads of a rendered chart.
type chartPod struct {
	Spec struct {
		Template struct {
			Spec struct {
				InitContainers []chartContainer `yaml:"initContainers"`
				Containers     []chartContainer
				Volumes        []struct {
					Name     string
					EmptyDir *struct{} `yaml:"emptyDir"`
				}
			}
		}
	}
}

type chartContainer struct {
	Name, Image  string
	Command      []string
	Args         []string
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
	SecurityContext struct {
		ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
}

// renderChart runs helm template over the chart with the values files and --set-json
// pairs, and returns the Deployment and the files of the config ConfigMap (config.json,
// and stdio-config.json with stdioServers).
func renderChart(t *testing.T, h string, values []string, setJSON ...string) (chartPod, map[string]string) {
	t.Helper()
	chart := filepath.Join(repoRoot, "deploy/helm/mcpgate")
	args := []string{"template", "gw", chart, "--namespace", "tools"}
	for _, v := range values {
		args = append(args, "-f", filepath.Join(chart, v))
	}
	for _, s := range setJSON {
		args = append(args, "--set-json", s)
	}
	out, err := exec.Command(h, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var pod chartPod
	var cfg map[string]string
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
		switch {
		case head.Kind == "Deployment":
			if err := doc.Decode(&pod); err != nil {
				t.Fatal(err)
			}
		case head.Kind == "ConfigMap" && head.Metadata.Name == "gw-mcpgate-config":
			cfg = head.Data
		}
	}
	return pod, cfg
}

// TestChartStdioServers: with stdioServers, helm template renders one container per
// stdio server from its own image, running the mcpgate an init container (the
// gateway's image, copy-self) put on a shared volume, serving the server's command on
// its own loopback port with gateway run flags that exist; the gateway's config.json
// names each as a url server on that port. Then the pattern runs here as rendered
// (paths moved into a temporary directory, the server being mcpgate's built-in
// demo server): a session through the gateway lists and calls the stdio server's
// tools over loopback. Without stdioServers the pod has the gateway alone.
func TestChartStdioServers(t *testing.T) {
	deployCheck(t)
	h := helm(t)
	chart := filepath.Join(repoRoot, "deploy/helm/mcpgate")
	if out, err := exec.Command(h, "lint", "--strict", chart, "-f", filepath.Join(chart, "ci/stdio-values.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	pod, files := renderChart(t, h, []string{"ci/stdio-values.yaml"})
	cfg := files["config.json"]
	spec := pod.Spec.Template.Spec
	names := []string{}
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"mcpgate", "server-everything", "server-filesystem"}) {
		t.Fatalf("containers %q", names)
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Image != spec.Containers[0].Image ||
		!slices.Equal(spec.InitContainers[0].Args, []string{"copy-self", "/opt/mcpgate"}) {
		t.Fatalf("init containers %+v: want the gateway's image running copy-self /opt/mcpgate", spec.InitContainers)
	}
	var file struct {
		MCPServers map[string]struct {
			URL     string
			Command string
			Headers map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(cfg), &file); err != nil {
		t.Fatalf("config.json: %v\n%s", err, cfg)
	}
	env := func(n string) (string, bool) {
		return strings.Repeat("0", 64), n == "MCPGATE_TOKEN_SHA256" || n == "MCPGATE_STDIO_TOKEN" || n == "MCPGATE_STDIO_TOKEN_SHA256"
	}
	if _, err := config.ParseEnv([]byte(cfg), env); err != nil {
		t.Errorf("config.json: %v\n%s", err, cfg)
	}
	// Each stdio server's container serves only the holder of the release's stdio token.
	if sc, err := config.ParseEnv([]byte(files["stdio-config.json"]), env); err != nil || len(sc.Gate.Tokens) != 1 {
		t.Errorf("stdio-config.json: %v (tokens %+v)\n%s", err, sc, files["stdio-config.json"])
	}
	ports := map[string]bool{}
	for _, c := range spec.Containers[1:] {
		name := strings.TrimPrefix(c.Name, "server-")
		if c.Image != "node:22-slim" || !slices.Equal(c.Command, []string{"/opt/mcpgate/mcpgate"}) || !c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("%s: image %q command %q security %+v", c.Name, c.Image, c.Command, c.SecurityContext)
		}
		checkGatewayFlags(t, c.Name, c.Args, "listen", "policies", "config")
		if i := slices.Index(c.Args, "--config"); i < 0 || c.Args[i+1] != "/etc/mcpgate/config/stdio-config.json" {
			t.Errorf("%s: args %q: want --config /etc/mcpgate/config/stdio-config.json", c.Name, c.Args)
		}
		listen := c.Args[slices.Index(c.Args, "--listen")+1]
		host, port, _ := net.SplitHostPort(listen)
		if host != "127.0.0.1" || ports[port] {
			t.Errorf("%s listens on %q: want its own loopback port", c.Name, listen)
		}
		ports[port] = true
		if got := file.MCPServers[name].URL; got != "http://"+listen+"/mcp" {
			t.Errorf("config.json mcpServers.%s.url %q, want http://%s/mcp", name, got, listen)
		}
		if got := file.MCPServers[name].Headers["Authorization"]; got != "Bearer ${MCPGATE_STDIO_TOKEN}" {
			t.Errorf("config.json mcpServers.%s.headers.Authorization %q, want the stdio token", name, got)
		}
		if i := slices.Index(c.Args, "--"); i < 0 || !strings.HasPrefix(strings.Join(c.Args[i+1:], " "), "npx -y @modelcontextprotocol/server-") {
			t.Errorf("%s: the server's command: %q", c.Name, c.Args)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m struct {
			Name      string
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		}) bool {
			return m.Name == "mcpgate-bin" && m.MountPath == "/opt/mcpgate" && m.ReadOnly
		}) {
			t.Errorf("%s mounts %+v: want mcpgate-bin read-only at /opt/mcpgate", c.Name, c.VolumeMounts)
		}
	}
	if pod, _ := renderChart(t, h, []string{"ci/test-values.yaml"}); len(pod.Spec.Template.Spec.Containers) != 1 || len(pod.Spec.Template.Spec.InitContainers) != 0 {
		t.Errorf("without stdioServers: %d containers, %d init containers", len(pod.Spec.Template.Spec.Containers), len(pod.Spec.Template.Spec.InitContainers))
	}

	// The pattern, run as rendered, with mcpgate's demo server as the stdio server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	pod, files = renderChart(t, h, []string{"ci/test-values.yaml"},
		`stdioServers={"demo":{"image":"busybox","port":`+port+`,"command":["/opt/mcpgate/mcpgate","demo-server"]}}`)
	cfg = files["config.json"]
	etc := t.TempDir() // the config volume, as mounted at /etc/mcpgate/config
	if err := os.WriteFile(filepath.Join(etc, "stdio-config.json"), []byte(files["stdio-config.json"]), 0o644); err != nil {
		t.Fatal(err)
	}
	side := pod.Spec.Template.Spec.Containers[1]
	opt := filepath.Join(t.TempDir(), "opt")
	bin := filepath.Join(t.TempDir(), "mcpgate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, pod.Spec.Template.Spec.InitContainers[0].Args[0], opt).CombinedOutput(); err != nil {
		t.Fatalf("the init container's copy-self: %v\n%s", err, out)
	}
	moved := func(argv []string) []string {
		out := []string{}
		for _, a := range argv {
			out = append(out, strings.ReplaceAll(strings.ReplaceAll(a, "/opt/mcpgate", opt), "/etc/mcpgate/config", etc))
		}
		return out
	}
	argv := moved(append(slices.Clone(side.Command), side.Args...))
	start := func(argv []string, env ...string) *lockedBuf {
		log := &lockedBuf{}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			_ = cmd.Wait()
		})
		return log
	}
	const stdioToken = "stdio-token-of-the-release"
	stdioSum := sha256.Sum256([]byte(stdioToken))
	sideLog := start(argv, "MCPGATE_STDIO_TOKEN_SHA256="+hex.EncodeToString(stdioSum[:]))
	cfgFile := filepath.Join(t.TempDir(), "config.json")
	quoted, _ := json.Marshal(bin)
	gwCfg := strings.ReplaceAll(cfg, `"/usr/local/bin/mcpgate"`, string(quoted))
	if err := os.WriteFile(cfgFile, []byte(gwCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("chart-token"))
	gwLog := start([]string{bin, "gateway", "run", "--listen", "127.0.0.1:0", "--config", cfgFile, "--policies", filepath.Join(opt, "policies"), "--log-format", "json"},
		"MCPGATE_TOKEN_SHA256="+hex.EncodeToString(sum[:]), "MCPGATE_STDIO_TOKEN="+stdioToken)
	url := ""
	serving := regexp.MustCompile(`"url":"(http://[^"]+)"`)
	if !testwait.Within(6*testwait.Timeout, func() bool {
		if m := serving.FindStringSubmatch(gwLog.String()); m != nil {
			url = m[1]
		}
		return url != ""
	}) {
		t.Fatalf("the gateway did not listen:\n%s", gwLog.String())
	}
	// The gateway starts the url server down when the sidecar is not yet listening and
	// retries with backoff, as a pod's containers start in any order; wait for it.
	var tools []string
	served := testwait.Within(6*testwait.Timeout, func() bool {
		sid, res := mcpPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"chart","version":"1"}}}`)
		if sid == "" || res == nil {
			return false
		}
		mcpPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		_, res = mcpPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		tools = tools[:0]
		var r struct{ Tools []struct{ Name string } }
		_ = json.Unmarshal(res, &r)
		for _, tl := range r.Tools {
			tools = append(tools, tl.Name)
		}
		if !slices.Contains(tools, "demo_get_forecast") {
			return false
		}
		_, res = mcpPost(t, url, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo_get_forecast","arguments":{"city":"Porto"}}}`)
		if !strings.Contains(string(res), "Porto") {
			t.Fatalf("demo_get_forecast: %s\ngateway:\n%s\nserver container:\n%s", res, gwLog.String(), sideLog.String())
		}
		return true
	})
	if !served {
		t.Fatalf("no session through the gateway reached the stdio server (tools %q)\ngateway:\n%s\nserver container:\n%s", tools, gwLog.String(), sideLog.String())
	}
	// Another process of the pod, without the stdio token, cannot call the stdio
	// server's container past the gateway.
	for _, auth := range []string{"", "Bearer chart-token"} {
		resp, err := mcpRequest("http://127.0.0.1:"+port+"/mcp", auth, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pod","version":"1"}}}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the stdio server's container answered %q with %d, want 401", auth, resp.StatusCode)
		}
	}
}

// mcpRequest POSTs one message to a Streamable HTTP front with the Authorization
// header auth and the session sid ("" for none of either).
func mcpRequest(url, auth, sid, body string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	return (&http.Client{Timeout: 30 * time.Second}).Do(req)
}

// mcpPost POSTs one message with the chart test's bearer token and returns the
// session id and the response's result (nil for none).
func mcpPost(t *testing.T, url, sid, body string) (string, json.RawMessage) {
	t.Helper()
	resp, err := mcpRequest(url, "Bearer chart-token", sid, body)
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	var result json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var m struct{ Result json.RawMessage }
		if json.Unmarshal([]byte(line), &m) == nil && m.Result != nil {
			result = m.Result
		}
	}
	return resp.Header.Get("Mcp-Session-Id"), result
}
