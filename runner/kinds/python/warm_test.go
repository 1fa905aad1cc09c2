package python

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/types"
)

// warmTool is a tool of options o with a pool of o.Warm interpreters, closed at the
// test's end.
func warmTool(t *testing.T, o Options, l sandbox.Limits) *Tool {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Limits: l, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	o.Sandbox, o.TempDir = sb, t.TempDir()
	o.Zygote = o.Zygote || warmZygote
	tl := New(o)
	if _, err := tl.Interpreter(); err != nil {
		t.Fatalf("python3: %v", err)
	}
	t.Cleanup(tl.Close)
	if warmZygote {
		t.Cleanup(func() {
			if tl.zyForked.Load() == 0 {
				t.Error("no warm interpreter was forked from a zygote")
			}
		})
	}
	return tl
}

// warmZygote makes warmTool's tools fork their warm interpreters from a
// zygote (TestWarmZygote).
var warmZygote bool

// TestWarmZygote runs the warm interpreter tests with the interpreters
// forked from a zygote (Options.Zygote, the runner's default) instead of
// exec'd: the same answers, isolation between tasks, cancellation,
// limits, logs and shutdown.
func TestWarmZygote(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a zygote needs root (the tests above cover the exec'd interpreters)")
	}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ServesOneTask", TestWarmInterpreterServesOneTask},
		{"DeadIsDiscarded", TestWarmInterpreterDeadIsDiscarded},
		{"CanceledAndLimited", TestWarmInterpreterCanceledAndLimited},
		{"PoolClosedKillsInterpreters", TestWarmPoolClosedKillsInterpreters},
		{"Logs", TestWarmInterpreterLogs},
		{"FreshRandomness", testWarmFreshRandomness},
		{"ZygoteReplaced", testWarmZygoteReplaced},
		{"ChildrenFail", testWarmZygoteChildrenFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			warmZygote = true
			t.Cleanup(func() { warmZygote = false })
			c.fn(t)
		})
	}
	// Off (NOETL_PYTHON_ZYGOTE=false): every warm interpreter is exec'd.
	tl := warmTool(t, Options{Warm: 1, Zygote: false}, sandbox.Limits{})
	settleWarm(t, tl, 1)
	mustOK(t, tl.Exec(context.Background(), nil, map[string]any{"code": "result = 1"}, 30))
	settleWarm(t, tl, 1)
	if n := tl.zyForked.Load(); n != 0 || tl.zy != nil {
		t.Fatalf("Zygote off: %d interpreters forked from a zygote", n)
	}
}

// testWarmFreshRandomness: interpreters forked from one zygote do not
// share a random state: the random module, uuid4 and os.urandom give
// each task its own values.
func testWarmFreshRandomness(t *testing.T) {
	tl := warmTool(t, Options{Warm: 2}, sandbox.Limits{})
	seen := map[string]bool{}
	for i := range 4 {
		settleWarm(t, tl, 2)
		o := tl.Exec(context.Background(), nil, map[string]any{"code": `
import random, uuid, os
result = "%d %s %s" % (random.getrandbits(64), uuid.uuid4(), os.urandom(8).hex())`}, 30)
		r := fmt.Sprint(mustOK(t, o))
		for _, f := range strings.Fields(r) {
			if seen[f] {
				t.Fatalf("task %d drew %s again: %s", i, f, r)
			}
			seen[f] = true
		}
	}
}

// testWarmZygoteReplaced: a zygote that died is replaced by the next warm
// start; tasks go on running warm.
func testWarmZygoteReplaced(t *testing.T) {
	tl := warmTool(t, Options{Warm: 1}, sandbox.Limits{})
	settleWarm(t, tl, 1)
	tl.zyMu.Lock()
	first := tl.zy
	tl.zyMu.Unlock()
	if first == nil {
		t.Fatal("no zygote")
	}
	ready := tl.pool().Ready()
	first.Kill()
	// Its children die with it: the ready one is discarded, not handed out.
	for _, w := range ready {
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a warm interpreter outlived its zygote")
		}
	}
	for i := range 3 {
		o := tl.Exec(context.Background(), nil, map[string]any{"code": "result = 5"}, 30)
		if fmt.Sprint(mustOK(t, o)) != "5" {
			t.Fatalf("task %d: %v", i, o.Result)
		}
		settleWarm(t, tl, 1)
	}
	tl.zyMu.Lock()
	second := tl.zy
	tl.zyMu.Unlock()
	if second == nil || second == first || !second.Alive() {
		t.Fatalf("the dead zygote was not replaced: %v %v", first, second)
	}
}

// settleWarm waits until the tool's pool holds n ready interpreters.
func settleWarm(t *testing.T, tl *Tool, n int) {
	t.Helper()
	p := tl.pool()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if st := p.Stats(); st.Ready >= n && st.Starting == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the pool has not %d ready interpreters: %+v", n, p.Stats())
}

const leakProbe = `
import builtins, os, sys
seen = {
    "pid_marker": getattr(builtins, "_noetl_marker", None),
    "env": os.environ.get("NOETL_LEAK"),
    "files": sorted(os.listdir(".")),
    "modules_task": "noetl_task_module" in sys.modules,
}
builtins._noetl_marker = marker
os.environ["NOETL_LEAK"] = marker
open("left-by-" + marker, "w").write(secret)
sys.modules["noetl_task_module"] = object()
result = seen
`

// TestWarmInterpreterServesOneTask: with NOETL_PYTHON_WARM_INTERPRETERS
// set, tasks run in interpreters the pool started ahead (the pool hands
// them out), each one once: what a task leaves in its interpreter
// (builtins, environment, modules) and in its workspace is not seen by
// the next tasks, and each used interpreter is replaced.
func TestWarmInterpreterServesOneTask(t *testing.T) {
	tl := warmTool(t, Options{Warm: 2}, sandbox.Limits{})
	settleWarm(t, tl, 2)
	for i, m := range []string{"a", "b", "c", "d"} {
		o := tl.Exec(context.Background(), map[string]any{"marker": m, "secret": "s3cr3t-" + m}, map[string]any{"code": leakProbe}, 30)
		seen, ok := mustOK(t, o).(map[string]any)
		if !ok {
			t.Fatalf("task %d: result %#v", i, o.Result)
		}
		if seen["pid_marker"] != nil || seen["env"] != nil || seen["modules_task"] != false {
			t.Fatalf("task %d sees an earlier task's interpreter: %v", i, seen)
		}
		if files, _ := seen["files"].([]any); len(files) != 0 {
			t.Fatalf("task %d sees an earlier task's files: %v", i, files)
		}
	}
	st := tl.pool().Stats()
	if st.Handed != 4 {
		t.Fatalf("pool %+v: want 4 interpreters handed out (the tasks ran warm)", st)
	}
	settleWarm(t, tl, 2)
	if st := tl.pool().Stats(); st.Started < 6 {
		t.Fatalf("pool %+v: the 4 used interpreters were not replaced", st)
	}
}

// TestWarmInterpreterDeadIsDiscarded: a warm interpreter that died while
// waiting is not handed out; the task runs in another one.
func TestWarmInterpreterDeadIsDiscarded(t *testing.T) {
	tl := warmTool(t, Options{Warm: 1}, sandbox.Limits{})
	settleWarm(t, tl, 1)
	p := tl.pool()
	killReady(t, tl)
	o := tl.Exec(context.Background(), nil, map[string]any{"code": "result = 7"}, 30)
	if r := fmt.Sprint(mustOK(t, o)); r != "7" {
		t.Fatalf("result %s", r)
	}
	if st := p.Stats(); st.Dropped < 1 {
		t.Fatalf("pool %+v: the dead interpreter was not discarded", st)
	}
}

// killReady kills the processes of the pool's ready interpreters and
// waits until they have exited.
func killReady(t *testing.T, tl *Tool) {
	t.Helper()
	for _, w := range tl.pool().Ready() {
		_ = syscall.Kill(w.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a killed warm interpreter did not exit")
		}
	}
}

// TestWarmInterpreterCanceledAndLimited: a task in a warm interpreter is
// still interrupted by its context's end (cancellation, timeout), and its
// memory limit still applies.
func TestWarmInterpreterCanceledAndLimited(t *testing.T) {
	tl := warmTool(t, Options{Warm: 1}, sandbox.Limits{AddressSpaceBytes: 512 << 20})
	settleWarm(t, tl, 1)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	o := tl.Exec(ctx, nil, map[string]any{"code": "import time\ntime.sleep(60)"}, 120)
	if o.Status != types.StatusError || o.Error.Kind != "canceled" || time.Since(start) > 20*time.Second {
		t.Fatalf("canceled after 300ms: %+v after %s", o.Error, time.Since(start))
	}
	settleWarm(t, tl, 1)
	o = tl.Exec(context.Background(), nil, map[string]any{"code": "import time\ntime.sleep(60)"}, 0.5)
	if o.Status != types.StatusError || o.Error.Kind != "timeout" {
		t.Fatalf("0.5 s timeout: %+v", o.Error)
	}
	settleWarm(t, tl, 1)
	o = tl.Exec(context.Background(), nil, map[string]any{"code": "x = bytearray(2 << 30)\nresult = len(x)"}, 60)
	if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "memory") {
		t.Fatalf("2 GiB under a 512 MiB limit in a warm interpreter: %+v", o.Error)
	}
	if st := tl.pool().Stats(); st.Handed < 3 {
		t.Fatalf("pool %+v: the tasks did not run warm", st)
	}
}

// TestWarmPoolClosedKillsInterpreters: Close (the runner's shutdown)
// kills the ready interpreters; later tasks start their own.
func TestWarmPoolClosedKillsInterpreters(t *testing.T) {
	tl := warmTool(t, Options{Warm: 2}, sandbox.Limits{})
	settleWarm(t, tl, 2)
	ready := tl.pool().Ready()
	tl.Close()
	for _, w := range ready {
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a warm interpreter outlived Close")
		}
	}
	o := tl.Exec(context.Background(), nil, map[string]any{"code": "result = 1"}, 30)
	mustOK(t, o)
}

// TestWarmInterpreterLogs: a warm interpreter's answer comes back with
// everything the task printed (stdout and stderr, its tail beyond
// MaxLogBytes), though the answer does not wait for its shutdown.
func TestWarmInterpreterLogs(t *testing.T) {
	tl := warmTool(t, Options{Warm: 1, MaxLogBytes: 1 << 10}, sandbox.Limits{})
	for i := range 3 {
		settleWarm(t, tl, 1)
		o := tl.Exec(context.Background(), map[string]any{"i": i}, map[string]any{"code": `
import sys
print("x" * 5000)
print("out-%d" % i)
sys.stderr.write("err-%d\n" % i)
result = i`}, 30)
		mustOK(t, o)
		if !strings.Contains(o.Logs, fmt.Sprintf("out-%d", i)) || !strings.Contains(o.Logs, fmt.Sprintf("err-%d", i)) || !strings.Contains(o.Logs, "earlier output dropped") {
			t.Fatalf("task %d logs: %q", i, o.Logs)
		}
	}
	if st := tl.pool().Stats(); st.Handed != 3 {
		t.Fatalf("pool %+v: want 3 handed out", st)
	}
}

// testWarmZygoteChildrenFail: when a zygote's children fail to start
// (here: their program exits at once), tasks still run, and after
// zygoteFailures failed starts in a row the tool retires the zygote and
// execs its warm interpreters.
func testWarmZygoteChildrenFail(t *testing.T) {
	zygoteProgram = "import sys\nsys.exit(3)\n"
	t.Cleanup(func() { zygoteProgram = runnerSource })
	tl := warmTool(t, Options{Warm: 1}, sandbox.Limits{})
	retired := func() bool {
		tl.zyMu.Lock()
		defer tl.zyMu.Unlock()
		return tl.zy == nil && time.Now().Before(tl.zyRetry)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; !retired(); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d tasks whose warm starts failed the zygote is not retired: pool %+v", i, tl.pool().Stats())
		}
		o := tl.Exec(context.Background(), nil, map[string]any{"code": "result = 2"}, 30)
		if fmt.Sprint(mustOK(t, o)) != "2" {
			t.Fatalf("task %d: %v", i, o.Result)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tl.pool().Stats().Handed != 0 || tl.zyForked.Load() < zygoteFailures {
		t.Fatalf("pool %+v, %d forked: want no warm task before the retirement and %d failed forks", tl.pool().Stats(), tl.zyForked.Load(), zygoteFailures)
	}
	// The pool recovers with exec'd interpreters: a later task runs warm
	// (each task's Take starts the pool's next try).
	deadline = time.Now().Add(30 * time.Second)
	for tl.pool().Stats().Handed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no task ran in an exec'd warm interpreter after the retirement: pool %+v", tl.pool().Stats())
		}
		o := tl.Exec(context.Background(), nil, map[string]any{"code": "result = 4"}, 30)
		if fmt.Sprint(mustOK(t, o)) != "4" {
			t.Fatalf("after the retirement: %v", o.Result)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
