//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/egress"
)

// runIn runs python code in s with dir as its directory and returns the
// JSON object the code prints last, the command (for LimitHit) and Wait's
// error.
func runIn(t *testing.T, s *Sandbox, dir, code string) (map[string]any, *Cmd, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := command(t, s, ctx, "-c", code)
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	c.Stdin = devNull(t)
	out, _ := startCaptured(t, c)()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &m)
	return m, c, out
}

func workdir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "noetl-iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// An isolated command sees the system read-only, its own directory as its
// directory and /tmp, its own processes in /proc, and nothing else of the
// host: not another directory of the host, not the engine's files.
func TestIsolatedRoot(t *testing.T) {
	requireRoot(t)
	s := newSandbox(t, Options{Isolate: true, ControlDir: workdir(t)})
	dir := workdir(t)
	hostSecret := filepath.Join(workdir(t), "engine.key")
	if err := os.WriteFile(hostSecret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _, out := runIn(t, s, dir, fmt.Sprintf(`
import os, json
r = {}
r["root"] = sorted(os.listdir("/"))
r["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    open(%q).read(); r["host_file"] = "read"
except OSError as e:
    r["host_file"] = type(e).__name__
open("/tmp/from-task", "w").write("x")
open(os.path.join(os.environ["HOME"], "in-dir"), "w").write("x")
r["tmp_private"] = not os.path.exists(%q)
try:
    open("/usr/evil", "w"); r["usr"] = "written"
except OSError as e:
    r["usr"] = type(e).__name__
try:
    open("/evil", "w"); r["root_write"] = "written"
except OSError as e:
    r["root_write"] = type(e).__name__
r["environ1"] = open("/proc/1/environ", "rb").read().decode("latin-1")
print(json.dumps(r))
`, hostSecret, filepath.Join(dir, "from-task")))
	if m == nil {
		t.Fatalf("no result: %s", out)
	}
	if m["host_file"] != "FileNotFoundError" {
		t.Errorf("a host file outside the command's directory: %v, want FileNotFoundError", m["host_file"])
	}
	if m["tmp_private"] != true {
		t.Errorf("/tmp is not private")
	}
	if _, err := os.Stat(filepath.Join(dir, "in-dir")); err != nil {
		t.Errorf("a file written to the command's directory is not there: %v", err)
	}
	if _, err := os.Stat("/tmp/from-task"); err == nil {
		t.Errorf("the command wrote the host's /tmp")
	}
	if m["usr"] == "written" || m["root_write"] == "written" {
		t.Errorf("the system or the root is writable: /usr %v, / %v", m["usr"], m["root_write"])
	}
	if pids := m["pids"].([]any); len(pids) > 2 {
		t.Errorf("/proc shows %d processes, want only the command's own: %v", len(pids), pids)
	}
	if strings.Contains(m["environ1"].(string), testSecret) {
		t.Error("the command read the engine's environment")
	}
	for _, e := range m["root"].([]any) {
		switch e {
		case "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "proc", "dev", "tmp":
		default:
			if !strings.HasPrefix(dir, "/"+e.(string)+"/") {
				t.Errorf("the command's root holds %q", e)
			}
		}
	}
}

// The command's network namespace has only loopback: an allowed
// destination is reached through its forwarder, a refused one through
// neither the forwarder (there is none) nor the proxy (403), and a
// direct connection to any other address finds no route — no packet
// leaves the namespace.
func TestNetworkNamespace(t *testing.T) {
	requireRoot(t)
	allowed := serveHTTP(t, "allowed service")
	refused := serveHTTP(t, "refused service")
	p, err := egress.New("local", []string{allowed.addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Options{Isolate: true, ControlDir: workdir(t), Network: p})
	m, _, out := runIn(t, s, workdir(t), fmt.Sprintf(`
import json, os, socket, urllib.request, urllib.error
r = {"proxy": os.environ.get("HTTP_PROXY", "")}
def get(url, proxy=True):
    h = urllib.request.ProxyHandler() if proxy else urllib.request.ProxyHandler({})
    try:
        return urllib.request.build_opener(h).open(url, timeout=5).read().decode()
    except urllib.error.HTTPError as e:
        return "HTTP %%d %%s" %% (e.code, e.read().decode()[:200])
    except Exception as e:
        return type(e).__name__ + ": " + str(e)
r["allowed_direct"] = get("http://%s/", proxy=False)
r["allowed_proxy"] = get("http://%s/")
r["refused_direct"] = get("http://%s/", proxy=False)
r["refused_proxy"] = get("http://%s/")
r["metadata_proxy"] = get("http://169.254.169.254/computeMetadata/v1/")
r["metadata_name_proxy"] = get("http://metadata.google.internal/computeMetadata/v1/")
for name, addr in [("metadata_socket", ("169.254.169.254", 80)), ("private_socket", ("10.1.2.3", 5432))]:
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(addr); r[name] = "connected"
    except OSError as e:
        r[name] = "%%s errno %%s" %% (type(e).__name__, e.errno)
print(json.dumps(r))
`, allowed.addr, allowed.addr, refused.addr, refused.addr))
	if m == nil {
		t.Fatalf("no result: %s", out)
	}
	if m["allowed_direct"] != "allowed service" || m["allowed_proxy"] != "allowed service" {
		t.Errorf("the allowed destination: direct %v, proxy %v", m["allowed_direct"], m["allowed_proxy"])
	}
	if !strings.Contains(m["refused_direct"].(string), "Connection refused") {
		t.Errorf("a refused loopback destination, direct: %v (want connection refused: nothing listens in the namespace)", m["refused_direct"])
	}
	for _, k := range []string{"refused_proxy", "metadata_proxy", "metadata_name_proxy"} {
		if v := m[k].(string); !strings.HasPrefix(v, "HTTP 403") || !strings.Contains(v, "refused by the network policy") {
			t.Errorf("%s: %v, want the proxy's 403 naming the policy", k, v)
		}
	}
	for _, k := range []string{"metadata_socket", "private_socket"} {
		if v := m[k].(string); !strings.Contains(v, "errno 101") { // ENETUNREACH: no route out of the namespace
			t.Errorf("%s: %v, want Network is unreachable", k, v)
		}
	}
	if refused.hits() != 0 {
		t.Errorf("the refused service was reached %d times", refused.hits())
	}
}

type testServer struct {
	addr string
	n    chan struct{}
}

func (s *testServer) hits() int { return len(s.n) }

func serveHTTP(t *testing.T, body string) *testServer {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: l.Addr().String(), n: make(chan struct{}, 100)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.n <- struct{}{}
		_, _ = io.WriteString(w, body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return ts
}

// Control groups hold a task's memory and processes: a hog is killed or
// refused and the command reports which limit it hit.
func TestCgroupLimits(t *testing.T) {
	requireRoot(t)
	s := newSandbox(t, Options{Limits: Limits{MemoryBytes: 64 << 20, Processes: 16}})
	if s.Cgroups() == NoCgroup {
		t.Skip("no control groups here")
	}
	_, c, out := runIn(t, s, workdir(t), `
b = []
while True:
    b.append(bytearray(16 << 20))
`)
	if c.LimitHit() != "memory" {
		t.Errorf("memory hog: limit %q, want memory (output %s)", c.LimitHit(), out)
	}
	_, c, out = runIn(t, s, workdir(t), `
import os, time, json
n = 0
try:
    for i in range(64):
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
except OSError as e:
    print(json.dumps({"forked": n, "error": str(e)}))
    raise SystemExit(1)
`)
	if c.LimitHit() != "processes" {
		t.Errorf("fork bomb: limit %q, want processes (output %s)", c.LimitHit(), out)
	}
	// A well-behaved command hits nothing.
	_, c, _ = runIn(t, s, workdir(t), `print("{}")`)
	if c.LimitHit() != "" {
		t.Errorf("quiet command: limit %q", c.LimitHit())
	}
}

// A command keeps running while other commands get their network
// namespaces: creating a namespace never ends a thread that started a
// command (a command gets its parent-death signal when the thread that
// forked it exits).
func TestCommandsOutliveOtherNamespaces(t *testing.T) {
	requireRoot(t)
	p, err := egress.New("local", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Options{Isolate: true, ControlDir: workdir(t), Network: p})
	type res struct {
		m   map[string]any
		out string
	}
	done := make(chan res, 40)
	for i := 0; i < 40; i++ {
		go func(i int) {
			code := `import json, time; time.sleep(0.05 * (` + fmt.Sprint(i%8) + `)); print(json.dumps({"ok": True}))`
			m, _, out := runIn(t, s, workdir(t), code)
			done <- res{m, out}
		}(i)
	}
	for i := 0; i < 40; i++ {
		r := <-done
		if r.m["ok"] != true {
			t.Errorf("a command died beside others: %s", r.out)
		}
	}
}

// The parent group weighs as many processes as commands run in it, so
// the runner's tasks together get the CPU that many processes would (a
// parent of one process's weight starved them on a busy host).
func TestParentCPUWeight(t *testing.T) {
	requireRoot(t)
	parent := filepath.Join("/sys/fs/cgroup/cpu", fmt.Sprintf("noetl-weight-test-%d", os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Skipf("no cgroup v1 cpu hierarchy to test in: %v", err)
	}
	defer os.Remove(parent)
	s := newSandbox(t, Options{Cgroup: parent, Limits: Limits{CPUs: 1}})
	shares := func() string {
		b, _ := os.ReadFile(filepath.Join(parent, "cpu.shares"))
		return strings.TrimSpace(string(b))
	}
	var cmds []*Cmd
	for i := 0; i < 3; i++ {
		c := s.Command(context.Background(), python, "-S", "-c", "import time; time.sleep(1)")
		c.Dir = workdir(t)
		c.Env = []string{"PATH=/usr/bin"}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	if got := shares(); got != "3072" {
		t.Errorf("3 commands running: parent cpu.shares %s, want 3072", got)
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
	if got := shares(); got != "1024" {
		t.Errorf("none running: parent cpu.shares %s, want 1024", got)
	}
}
