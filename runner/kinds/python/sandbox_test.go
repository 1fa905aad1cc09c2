package python

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/types"
)

// Issue 10 item 5: user code cannot borrow the engine's identity.

const engineSecret = "noetl-python-engine-secret-51c2"

func TestTaskCannotReadEngineEnviron(t *testing.T) {
	t.Setenv("NOETL_ENGINE_TEST_SECRET", engineSecret)
	o := run(t, `
import os
out = {}
for pid in (engine_pid, os.getppid()):
    try:
        data = open("/proc/%d/environ" % pid, "rb").read()
        out[str(pid)] = "READ " + str(b"`+engineSecret+`" in data)
    except OSError as e:
        out[str(pid)] = "DENIED " + type(e).__name__
out["own_env"] = "NOETL_ENGINE_TEST_SECRET" in os.environ
result = out
`, map[string]any{"engine_pid": os.Getpid()}, nil)
	res, ok := mustOK(t, o).(map[string]any)
	if !ok {
		t.Fatalf("result %#v", o.Result)
	}
	if got := res[strconv.Itoa(os.Getpid())]; got != "DENIED PermissionError" {
		t.Errorf("reading the engine's /proc/<pid>/environ: %v", got)
	}
	if res["own_env"] != false {
		t.Error("the task inherited the engine's environment")
	}
	for k, v := range res {
		if s, _ := v.(string); strings.HasPrefix(s, "READ True") {
			t.Errorf("/proc/%s/environ holds the engine's secret", k)
		}
	}
}

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

func TestGrandchildDiesWithTaskOnTimeout(t *testing.T) {
	tl := tool(t)
	sb, err := tl.sandbox()
	if err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf("97%06d.%d", rand.IntN(1_000_000), rand.IntN(1000))
	o := tl.Exec(context.Background(), map[string]any{"m": m}, map[string]any{"code": `
import subprocess, time
subprocess.Popen(["sleep", m], start_new_session=True)  # leaves the process group
time.sleep(300)
`}, 2)
	if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "timeout" {
		t.Fatalf("outcome %+v, want error kind timeout", o)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		pid, ok := sleepAlive(m)
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if mode := sb.Mode(); !mode.PIDNamespace && !mode.DedicatedUID {
				t.Skipf("no PID namespace and no dedicated uid on this machine (mode %+v): the documented fallback cannot catch a grandchild in a new session", mode)
			}
			t.Fatalf("grandchild 'sleep %s' outlived the task (sandbox mode %+v)", m, sb.Mode())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func limitedTool(t *testing.T, l sandbox.Limits) *Tool {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Limits: l, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Sandbox: sb})
	if _, err := tl.Interpreter(); err != nil {
		t.Fatalf("python3: %v", err)
	}
	return tl
}

func TestMemoryHogIsLimited(t *testing.T) {
	tl := limitedTool(t, sandbox.Limits{AddressSpaceBytes: 512 << 20})
	o := tl.Exec(context.Background(), nil, map[string]any{"code": "x = bytearray(2 << 30)\nresult = len(x)"}, 60)
	if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "memory") || o.Py == nil || o.Py.ExceptionType != "MemoryError" {
		t.Fatalf("2 GiB under a 512 MiB address-space limit: %+v (py %+v)", o.Error, o.Py)
	}
	o = tl.Exec(context.Background(), nil, map[string]any{"code": "x = bytearray(64 << 20)\nresult = len(x)"}, 60)
	if o.Status != types.StatusOK {
		t.Fatalf("64 MiB: %+v\n%s", o.Error, o.Logs)
	}
}

func TestCPUHogIsLimited(t *testing.T) {
	tl := limitedTool(t, sandbox.Limits{CPUSeconds: 1})
	start := time.Now()
	o := tl.Exec(context.Background(), nil, map[string]any{"code": "while True:\n    pass"}, 60)
	if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "cpu (1 s, NOETL_SANDBOX_CPU_S)") {
		t.Fatalf("busy loop under a 1 s CPU limit: %+v after %s", o.Error, time.Since(start))
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopped after %s", d)
	}
}
