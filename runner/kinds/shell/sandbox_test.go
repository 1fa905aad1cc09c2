package shell

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/types"
)

// Issue 10 item 5: shell programs run in the same sandbox as python code.
// The sandbox's helper re-enters this test binary through the sandbox
// package's init function (imported by shell.go).

// sandboxTool returns a tool with a sandbox of its own, limited by l.
func sandboxTool(t *testing.T, l sandbox.Limits) (*Tool, *sandbox.Sandbox) {
	t.Helper()
	return sandboxToolOpts(t, sandbox.Options{Limits: l})
}

func sandboxToolOpts(t *testing.T, o sandbox.Options) (*Tool, *sandbox.Sandbox) {
	t.Helper()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	sb, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Sandbox: sb}), sb
}

func mustOK(t *testing.T, o types.Outcome) map[string]any {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s %+v %#v", o.Status, o.Error, o.Result)
	}
	return result(t, o)
}

func TestRunsUnderDedicatedUID(t *testing.T) {
	tl, sb := sandboxTool(t, sandbox.Limits{})
	if !sb.Mode().DedicatedUID {
		t.Skipf("sandbox mode %+v: no dedicated uid (the engine is not root), programs keep the engine's uid", sb.Mode())
	}
	// Two programs, each under its own uid: the second one still owns
	// (and can change) what the first left in the working directory.
	r := mustOK(t, tl.Exec(context.Background(), nil, map[string]any{"cmds": []any{
		"id -u; id -G; mkdir -p d/e; echo one > d/e/f; ln -s /etc/passwd link; chmod 700 d",
		"id -u; echo two >> d/e/f; cat d/e/f; rm -r d; ls -A",
	}}, 30))
	list := r["commands"].([]any)
	first := strings.Fields(list[0].(map[string]any)["stdout"].(string))
	second := strings.Fields(list[1].(map[string]any)["stdout"].(string))
	if len(first) != 2 || len(second) != 4 {
		t.Fatalf("stdout %q / %q", first, second)
	}
	for _, s := range []string{first[0], first[1], second[0]} {
		n, err := strconv.Atoi(s)
		if err != nil || n == 0 || n == os.Getuid() || n == os.Getgid() {
			t.Errorf("program identity %q (engine uid %d gid %d)", s, os.Getuid(), os.Getgid())
		}
	}
	if first[1] != first[0] {
		t.Errorf("groups %q, want only the uid's own group %s", first[1], first[0])
	}
	if got := strings.Join(second[1:], " "); got != "one two link" {
		t.Errorf("second program saw %q", got)
	}
	// The symbolic link was handed over, not followed.
	if st, err := os.Stat("/etc/passwd"); err == nil && st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("/etc/passwd changed owner: uid %d", st.Sys().(*syscall.Stat_t).Uid)
	}
}

func TestCwdInaccessibleToSandboxUID(t *testing.T) {
	tl, sb := sandboxTool(t, sandbox.Limits{})
	if !sb.Mode().DedicatedUID {
		t.Skipf("sandbox mode %+v: no dedicated uid, the engine's own directories stay accessible", sb.Mode())
	}
	dir := sharedDir(t, 0o700) // the engine's only
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := tl.Exec(context.Background(), nil, map[string]any{"command": "touch x", "cwd": dir}, 30)
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "cannot be entered") {
		t.Fatalf("%+v", o.Error)
	}
	after, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Sys().(*syscall.Stat_t).Uid != after.Sys().(*syscall.Stat_t).Uid || after.Mode() != before.Mode() {
		t.Fatalf("cwd changed hands: %v -> %v", before.Mode(), after.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Fatal("the program ran in a directory its uid cannot enter")
	}
}

const engineSecret = "noetl-shell-engine-secret-7d1e"

func TestCannotReadEngineEnviron(t *testing.T) {
	t.Setenv("NOETL_SHELL_TEST_SECRET", engineSecret)
	tl, _ := sandboxTool(t, sandbox.Limits{})
	pid := os.Getpid()
	o := tl.Exec(context.Background(), nil, map[string]any{
		"command": fmt.Sprintf("cat /proc/%d/environ; echo status=$?; cat /proc/%d/cmdline >/dev/null; echo cmdline=$?", pid, pid),
	}, 30)
	r := result(t, o)
	out := r["stdout"].(string)
	if strings.Contains(out, engineSecret) || strings.Contains(r["stderr"].(string), engineSecret) {
		t.Fatalf("the program read the engine's environment:\n%s", out)
	}
	if !strings.Contains(out, "status=1") || !strings.Contains(r["stderr"].(string), "Permission denied") {
		t.Fatalf("reading /proc/%d/environ: stdout %q stderr %q", pid, out, r["stderr"])
	}
	if !strings.Contains(out, "cmdline=0") {
		// The engine's process is visible, only its secrets are closed.
		t.Fatalf("/proc/%d/cmdline not readable: %q", pid, out)
	}
}

func TestLimitsFromSandbox(t *testing.T) {
	tl, sb := sandboxTool(t, sandbox.Limits{OpenFiles: 123, AddressSpaceBytes: 1 << 30, CPUSeconds: 77, Processes: 45})
	r := mustOK(t, tl.Exec(context.Background(), nil, map[string]any{"command": "ulimit -n; ulimit -v; ulimit -t; grep -E '^Max (open files|processes)' /proc/self/limits"}, 30))
	lines := strings.Split(strings.TrimSpace(r["stdout"].(string)), "\n")
	if len(lines) != 5 || lines[0] != "123" || lines[1] != strconv.Itoa(1<<20) || lines[2] != "77" {
		t.Fatalf("limits %q", lines)
	}
	if f := strings.Fields(lines[4]); len(f) < 5 || f[3] != "123" || f[4] != "123" {
		t.Errorf("open files in /proc/self/limits: %q", lines[4])
	}
	if sb.Mode().DedicatedUID && sb.Cgroups() == sandbox.NoCgroup {
		// With a pids control group, the group counts processes instead.
		if f := strings.Fields(lines[3]); len(f) < 3 || f[2] != "45" {
			t.Errorf("processes in /proc/self/limits: %q", lines[3])
		}
	}
}

func TestCPULimitIsLimit(t *testing.T) {
	tl, _ := sandboxTool(t, sandbox.Limits{CPUSeconds: 1})
	start := time.Now()
	o := tl.Exec(context.Background(), nil, map[string]any{"command": "while :; do :; done"}, 60)
	if o.Status != types.StatusError || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "cpu (1 s, NOETL_SANDBOX_CPU_S)") {
		t.Fatalf("busy loop under a 1 s CPU limit: %+v after %s", o.Error, time.Since(start))
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopped after %s", d)
	}
}

// sleepAlive finds a `sleep m` process.
func sleepAlive(m string) (int, bool) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Equal(b, []byte("sleep\x00"+m+"\x00")) {
			return pid, true
		}
	}
	return 0, false
}

// TestDescendantsDie: a background descendant in a session of its own
// does not outlive its task, whether the program ends or times out, with a
// PID namespace or (as root) by its uid alone.
func TestDescendantsDie(t *testing.T) {
	t.Run("namespace", func(t *testing.T) { testDescendantsDie(t, sandbox.Options{}) })
	t.Run("no namespace", func(t *testing.T) { testDescendantsDie(t, sandbox.Options{NoNamespace: true}) })
}

func testDescendantsDie(t *testing.T, opts sandbox.Options) {
	tl, sb := sandboxToolOpts(t, opts)
	setsid := ""
	if _, err := exec.LookPath("setsid"); err == nil {
		setsid = "setsid "
	}
	for _, tc := range []struct {
		name    string
		program string
		timeout float64
		kind    string
	}{
		{"ends", "%ssleep %s >/dev/null 2>&1 &\necho started", 30, ""},
		{"ends holding output", "%ssleep %s &\necho started", 30, ""},
		{"times out", "%ssleep %s >/dev/null 2>&1 &\necho started; sleep 300", 1, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fmt.Sprintf("97%06d.%d", rand.IntN(1_000_000), rand.IntN(1000))
			o := tl.Exec(context.Background(), nil, map[string]any{"command": fmt.Sprintf(tc.program, setsid, m)}, tc.timeout)
			if tc.kind == "" && o.Status != types.StatusOK || tc.kind != "" && (o.Error == nil || string(o.Error.Kind) != tc.kind) {
				t.Fatalf("outcome %s %+v", o.Status, o.Error)
			}
			if out := result(t, o)["stdout"]; out != "started\n" {
				t.Fatalf("stdout %q", out)
			}
			deadline := time.Now().Add(3 * time.Second)
			for {
				pid, ok := sleepAlive(m)
				if !ok {
					break
				}
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					if mode := sb.Mode(); setsid != "" && !mode.PIDNamespace && !mode.DedicatedUID {
						t.Skipf("no PID namespace and no dedicated uid here (mode %+v): the documented fallback cannot catch a descendant in a new session", mode)
					}
					t.Fatalf("descendant 'sleep %s' outlived the task (sandbox mode %+v)", m, sb.Mode())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// No oracle across the root (docs/security.md "Rooms"): cwd and shell are resolved inside
// the task's root, so a path that exists on the runner's host outside the
// root gets exactly the answer of a path that exists nowhere; paths of
// the root itself work.
func TestNoOracleAcrossTheRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an isolated root needs root")
	}
	tl, _ := sandboxToolOpts(t, sandbox.Options{Isolate: true, ControlDir: t.TempDir(), LockDir: t.TempDir()})
	hostOnly := t.TempDir() // exists on the host, not in the task's root
	hostSh := filepath.Join(hostOnly, "sh")
	if err := os.WriteFile(hostSh, []byte("#!/bin/sh\necho host\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nowhere", "at-all")
	answer := func(cfg map[string]any, path string) string {
		o := tl.Exec(context.Background(), nil, cfg, 30)
		if o.Error == nil {
			t.Fatalf("%v ran: %#v", cfg, o.Result)
		}
		return string(o.Error.Kind) + ": " + strings.ReplaceAll(o.Error.Message, path, "PATH")
	}
	for _, key := range []string{"cwd", "shell"} {
		in := hostOnly
		if key == "shell" {
			in = hostSh
		}
		a := answer(map[string]any{"command": "true", key: in}, in)
		b := answer(map[string]any{"command": "true", key: missing}, missing)
		if a != b || !strings.HasPrefix(a, "config: ") {
			t.Errorf("%s: outside the root %q, missing %q: want the same config error", key, a, b)
		}
	}
	// What the root holds works.
	r := mustOK(t, tl.Exec(context.Background(), nil, map[string]any{"command": "pwd", "cwd": "/usr", "shell": "sh"}, 30))
	if r["stdout"] != "/usr\n" {
		t.Errorf("cwd /usr: %v", r)
	}
}
