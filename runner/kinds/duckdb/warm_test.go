package duckdb

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
)

// TestWarmWorkerMaxAge: a warm worker older than WarmMaxAge
// (NOETL_SANDBOX_WARM_MAX_AGE_S) is destroyed and replaced without a
// task asking; one whose process died while it waited is not handed out
// (the task runs in another one).
func TestWarmWorkerMaxAge(t *testing.T) {
	var made atomic.Int32
	root := t.TempDir()
	tl, ctx, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{Threads: 1, Warm: 1, WarmMaxAge: 300 * time.Millisecond,
		Workspaces: func() (*sandbox.Workspace, error) {
			made.Add(1)
			return sandbox.NewWorkspace(root, 0, false)
		}})
	ok(t, tl.Exec(ctx, nil, M{"query": "SELECT 1 AS x"}, 30)) // starts the pool
	for deadline := time.Now().Add(30 * time.Second); made.Load() < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers started in 30 s with a max age of 300 ms: the old ones were not replaced", made.Load())
		}
	}

	// A long max age: the ready worker stays until it dies.
	tl2, ctx2, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{Threads: 1, Warm: 1,
		Workspaces: func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(root, 0, false) }})
	ok(t, tl2.Exec(ctx2, nil, M{"query": "SELECT 1 AS x"}, 30))
	var w *worker
	for deadline := time.Now().Add(30 * time.Second); w == nil; time.Sleep(20 * time.Millisecond) {
		select {
		case w = <-tl2.pool.ready:
			tl2.pool.ready <- w
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no warm worker")
		}
	}
	if !w.alive() {
		t.Fatal("a ready worker reports itself dead")
	}
	_ = syscall.Kill(w.cmd.Process.Pid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); w.alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed worker still runs")
		}
	}
	if r := ok(t, tl2.Exec(ctx2, nil, M{"query": "SELECT 2 AS x"}, 30)); r["rows"] == nil {
		t.Fatalf("result %v", r)
	}
}
