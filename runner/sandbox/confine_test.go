//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/egress"
)

// confinedScenario makes the test binary, started confined
// (ConfineAttr), run the runner's side of the sandbox.
const confinedScenario = "NOETL_SANDBOX_CONFINED_SCENARIO"

// testRangeBase is the host uid range the confined test runs in (far from
// the pools of other tests and of the local stack's runner).
const testRangeBase = 0x5e000000

// runConfinedScenario runs inside the user namespace: it must be root
// there, mount a workspace tmpfs, and run an isolated, networked python
// task under a dedicated uid of its range, which must find the engine's
// key file closed, its workspace private and the network policy applied.
// Prints one JSON object.
func runConfinedScenario() int {
	r := map[string]any{}
	defer func() { b, _ := json.Marshal(r); fmt.Println(string(b)) }()
	c, err := Confined()
	r["confined"] = fmt.Sprintf("%+v %v", c, err)
	r["root_in_ns"] = c.Root && !c.Initial && c.UIDs >= 65536
	key := os.Getenv("TEST_KEY_FILE")
	if _, err := os.ReadFile(key); err != nil {
		r["runner_reads_key"] = "denied"
	} else {
		r["runner_reads_key"] = "read"
	}
	work := os.Getenv("TEST_WORK")
	ws, err := NewWorkspace(filepath.Join(work, "ws"), 8<<20, true)
	if err != nil {
		r["workspace"] = err.Error()
		return 0
	}
	defer ws.Close()
	r["workspace_tmpfs"] = ws.Tmpfs
	p, _ := egress.New("local", []string{os.Getenv("TEST_ALLOWED")}, nil)
	s, err := New(Options{Isolate: true, Network: p, BaseUID: 1000, PoolSize: 8, ControlDir: filepath.Join(work, "ctl"),
		Cgroup: os.Getenv("TEST_CGROUP"), Limits: Limits{MemoryBytes: 64 << 20, Processes: 32},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r["sandbox"] = err.Error()
		return 0
	}
	r["mode"] = fmt.Sprintf("%+v", s.Mode())
	r["cgroups"] = int(s.Cgroups())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := s.Command(ctx, python, "-c", fmt.Sprintf(`
import json, os, socket, urllib.request
t = {"uid": os.getuid()}
try:
    open(%q).read(); t["key"] = "read"
except OSError as e:
    t["key"] = type(e).__name__
t["pids"] = len([p for p in os.listdir("/proc") if p.isdigit()])
open("big", "wb").write(b"x" * (4 << 20))
try:
    open("bigger", "wb").write(b"x" * (16 << 20)); t["disk"] = "wrote"
except OSError as e:
    t["disk"] = "errno %%d" %% e.errno
t["allowed"] = urllib.request.urlopen("http://%s/", timeout=5).read().decode()
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("169.254.169.254", 80)); t["metadata"] = "connected"
except OSError as e:
    t["metadata"] = "errno %%d" %% e.errno
print(json.dumps(t))
`, key, os.Getenv("TEST_ALLOWED")))
	cmd.Dir = ws.Dir
	cmd.Workspace = ws.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws.Dir, "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		r["start"] = err.Error()
		return 0
	}
	_ = cmd.Wait()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var task map[string]any
	if json.Unmarshal([]byte(lines[len(lines)-1]), &task) != nil {
		r["task_output"] = out.String()
		return 0
	}
	r["task"] = task
	r["disk_full"] = ws.Full()
	return 0
}

// The runner's production mode: root of a user namespace whose uids map
// to an unprivileged host range (ConfineAttr), it mounts each task's
// workspace tmpfs and gives each task a uid of the range, its own root,
// network namespace and control group (delegated v1 groups), and neither
// it nor the task can read a root-owned key file of the host.
func TestConfinedRunner(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not installed", python)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "noetl-sbx-confined-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(key, []byte("engine key"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, testRangeBase, testRangeBase); err != nil {
		t.Fatal(err)
	}
	// Delegated v1 groups, as the stack's supervisor makes them.
	var groups []string
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		g := filepath.Join("/sys/fs/cgroup", ctl, "noetl-sandbox-test-"+strconv.Itoa(os.Getpid()))
		if err := os.Mkdir(g, 0o755); err != nil {
			continue
		}
		defer os.Remove(g)
		_ = filepath.WalkDir(g, func(p string, _ os.DirEntry, _ error) error { return os.Chown(p, testRangeBase, testRangeBase) })
		groups = append(groups, g)
	}
	allowed := serveHTTP(t, "allowed service")
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{confinedScenario + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + work, "TEST_KEY_FILE=" + key, "TEST_WORK=" + work,
		"TEST_ALLOWED=" + allowed.addr, "TEST_CGROUP=" + strings.Join(groups, ",")}
	cmd.Dir = dir
	cmd.SysProcAttr = ConfineAttr(testRangeBase, 65536)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("confined runner: %v: %s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var r map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("confined runner output: %s", out.String())
	}
	t.Logf("confined runner: %s", lines[len(lines)-1])
	if r["root_in_ns"] != true {
		t.Fatalf("not root of a user namespace with a uid range: %v", r["confined"])
	}
	if r["runner_reads_key"] != "denied" {
		t.Error("the confined runner read a root-owned 0600 key of the host")
	}
	if r["workspace_tmpfs"] != true {
		t.Errorf("no workspace tmpfs: %v", r["workspace"])
	}
	task, _ := r["task"].(map[string]any)
	if task == nil {
		t.Fatalf("the task did not run: %v", r)
	}
	if task["uid"] == float64(0) || task["key"] != "FileNotFoundError" || task["pids"] != float64(1) {
		t.Errorf("task uid %v (want a dedicated one), key file %v (want not found: not in its root), /proc pids %v (want 1)", task["uid"], task["key"], task["pids"])
	}
	if task["disk"] != "errno 28" || r["disk_full"] != true { // ENOSPC
		t.Errorf("a write past the 8 MiB workspace: %v (full %v), want ENOSPC", task["disk"], r["disk_full"])
	}
	if task["allowed"] != "allowed service" || task["metadata"] != "errno 101" {
		t.Errorf("network: allowed %v, metadata %v (want the service, and ENETUNREACH)", task["allowed"], task["metadata"])
	}
	if len(groups) > 0 && r["cgroups"] != float64(CgroupV1) {
		t.Errorf("delegated v1 groups not used: %v", r["cgroups"])
	}
}
