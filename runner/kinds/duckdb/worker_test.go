//go:build cgo

package duckdb

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// roomed returns a tool whose tasks run in workers of a sandbox like the
// runner's (isolated, a control group with limits), the context of a
// task with a workspace, and the data root.
func roomed(t *testing.T, lim sandbox.Limits, o Options) (*Tool, context.Context, *sandbox.Workspace, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the worker's room needs root (of a user namespace)")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Isolate: true, ControlDir: t.TempDir(), LockDir: t.TempDir(), Limits: lim, DataRoots: []string{root},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !sb.Mode().Seccomp {
		t.Fatal("no seccomp filter")
	}
	ws, err := sandbox.NewWorkspace(t.TempDir(), 256<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	o.Sandbox, o.DataRoots = sb, []string{root}
	tl := New(o)
	t.Cleanup(tl.Close)
	return tl, sandbox.WithWorkspace(context.Background(), ws), ws, root
}

// The worker runs the task in its own process, under its own uid and
// pid, confined like the in-process tool: the same results, the same
// refusals.
func TestWorkerRunsTheTask(t *testing.T) {
	tl, ctx, _, root := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{MemoryLimit: "256MB", Threads: 1})
	run := func(cfg M) types.Outcome { return tl.Exec(ctx, nil, cfg, 30) }
	r := ok(t, run(M{"query": "SELECT 41 + 1 AS n, current_setting('memory_limit') AS mem, current_setting('threads') AS th"}))
	row := r["rows"].([]any)[0].(M)
	if row["n"] != int64(42) || row["th"] != int64(1) || !strings.Contains(row["mem"].(string), "MiB") {
		t.Fatalf("row %v", row)
	}
	// Files: the workspace and the data root, nothing else.
	ok(t, run(M{"database": "task.duckdb", "command": "CREATE TABLE t AS SELECT 7 AS x"}))
	r = ok(t, run(M{"database": "task.duckdb", "query": "SELECT x FROM t"}))
	if r["rows"].([]any)[0].(M)["x"] != int64(7) {
		t.Errorf("workspace database: %v", r)
	}
	ok(t, run(M{"database": filepath.Join(root, "shared.duckdb"), "command": "CREATE TABLE s AS SELECT 1 AS i"}))
	for _, q := range []string{"SELECT * FROM read_text('/etc/shadow')", "SELECT * FROM read_text('" + os.Args[0] + "')"} {
		if o := run(M{"query": q}); o.Error == nil || o.Error.Kind != "forbidden_path" {
			t.Errorf("%s: %+v, want forbidden_path", q, o.Error)
		}
	}
	// A bad statement is the worker's classified error.
	if o := run(M{"query": "SELEC 1"}); o.Error == nil || o.Error.Kind != "duckdb" || !strings.Contains(o.Error.Message, "syntax error") {
		t.Errorf("syntax error: %+v", o.Error)
	}
	// A config error is found before any worker starts.
	if o := run(M{"database": "x.duckdb"}); o.Error == nil || o.Error.Kind != "config" {
		t.Errorf("no SQL: %+v", o.Error)
	}
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// The shared-process attack (docs/security.md "Rooms"): strings built with repeat() live outside
// DuckDB's memory manager, so memory_limit does not hold them. In a
// worker the task's control group does: the task is killed alone (kind
// limit), the caller's memory does not grow, and a task in flight beside
// it completes.
func TestWorkerMemoryBlowUpFailsAlone(t *testing.T) {
	tl, ctx, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 256 << 20, Processes: 64}, Options{MemoryLimit: "2GB", Threads: 1})
	if tl.opts.Sandbox.Cgroups() == sandbox.NoCgroup {
		t.Skip("no control groups here")
	}
	before := peakRSS(t)
	var wg sync.WaitGroup
	var bystander types.Outcome
	wg.Add(1)
	go func() {
		defer wg.Done()
		bystander = tl.Exec(ctx, nil, M{"query": "SELECT count(*) AS n FROM range(30000000) t(i) WHERE i % 7 = 0"}, 60)
	}()
	o := tl.Exec(ctx, nil, M{"query": "SELECT length(repeat(repeat('x', 1000000), 1500)) AS n"}, 60)
	wg.Wait()
	if o.Error == nil || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "memory") {
		t.Fatalf("memory blow-up: %+v, want kind limit (memory)", o)
	}
	r := ok(t, bystander)
	if r["rows"].([]any)[0].(M)["n"] != int64(4285715) {
		t.Errorf("bystander: %v", r)
	}
	if grew := peakRSS(t) - before; grew > 200<<20 {
		t.Errorf("the caller's peak RSS grew by %d MiB: the string was built in its process", grew>>20)
	}
	t.Logf("blow-up: %s", o.Error.Message)
}

// A cancelled task's worker is killed at once (its whole room), and the
// task is kind canceled.
func TestWorkerCancel(t *testing.T) {
	tl, ctx, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 256 << 20, Processes: 64}, Options{Threads: 1})
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	t0 := time.Now()
	o := tl.Exec(cctx, nil, M{"query": "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 3 = 7"}, 60)
	if o.Error == nil || o.Error.Kind != "canceled" || time.Since(t0) > 10*time.Second {
		t.Fatalf("cancel: %+v after %s", o.Error, time.Since(t0))
	}
	// A deadline is kind timeout.
	o = tl.Exec(ctx, nil, M{"query": "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 3 = 7"}, 0.5)
	if o.Error == nil || o.Error.Kind != "timeout" {
		t.Fatalf("timeout: %+v", o.Error)
	}
}

// Rows stream from the worker to the caller's results tier sink as Arrow
// record batches: a large result is a reference whose table reads back
// whole, a small one the value itself.
func TestWorkerStreamsToTheSink(t *testing.T) {
	tl, ctx, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{MaxRows: 100, Threads: 1})
	plain := New(Options{MaxRows: 100})
	defer plain.Close()
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 4096}
	coords := types.ResultCoords{ExecutionID: "ex", Step: "q", Attempt: 1}
	ctx = results.WithSinks(ctx, func() *results.Sink {
		return rs.NewSink(context.Background(), coords, results.OffloadOptions{Limit: -1})
	})
	q := func(n int) M {
		return M{"query": "SELECT i AS id, 'name ' || i AS name, [i, i + 1] AS pair FROM range(" + strconv.Itoa(n) + ") r(i) ORDER BY id"}
	}
	small := ok(t, exec(t, plain, q(3)))
	if o := tl.Exec(ctx, nil, q(3), 30); o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any(small)) {
		t.Fatalf("small:\n got %#v\nwant %#v", o.Result, small)
	}
	o := tl.Exec(ctx, nil, q(50000), 30)
	if o.Status != types.StatusOK || !results.IsRef(o.Result) {
		t.Fatalf("large: %+v", o)
	}
	v, err := rs.Resolve(results.WithReader(context.Background(), results.Reader{Execution: "ex"}), o.Result.(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	rows := got["rows"].([]any)
	if got["row_count"] != int64(50000) || len(rows) != 50000 || !reflect.DeepEqual(rows[2], small["rows"].([]any)[2]) {
		t.Fatalf("resolved %v rows, row 2 %v", got["row_count"], rows[2])
	}
	// A failing query after rows began: the sink is aborted, the error
	// is the worker's.
	if o := tl.Exec(ctx, nil, M{"query": "SELECT CASE WHEN i < 40000 THEN i ELSE error('boom') END AS x FROM range(50000) r(i)"}, 30); o.Error == nil || !strings.Contains(o.Error.Message, "boom") {
		t.Fatalf("failing stream: %+v", o)
	}
}

// The transfer kind's ends run in workers too: rows out of a query, rows
// into a table (committed, or rolled back when not).
func TestWorkerTransferEnds(t *testing.T) {
	tl, ctx, _, root := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{Threads: 1})
	db := filepath.Join(root, "t.duckdb")
	w, err := tl.OpenWriter(ctx, db, "people", []string{"id", "name", "tags"}, ModeAppend)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, [][]any{{int64(1), "ann", []any{"a"}}, {int64(2), "bob", nil}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Not committed: rolled back.
	w, err = tl.OpenWriter(ctx, db, "people", []string{"id", "name", "tags"}, ModeAppend)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, [][]any{{int64(3), "cy", nil}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var got [][]any
	err = tl.QueryRows(ctx, db, "SELECT id, name FROM people ORDER BY id", nil, 1, func(cols []string, rows [][]any) error {
		if !reflect.DeepEqual(cols, []string{"id", "name"}) {
			t.Errorf("cols %v", cols)
		}
		got = append(got, rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, [][]any{{int64(1), "ann"}, {int64(2), "bob"}}) {
		t.Fatalf("rows %v", got)
	}
	err = tl.QueryRows(ctx, db, "SELECT * FROM nowhere", nil, 10, func([]string, [][]any) error { return nil })
	if o := tl.Failure(ctx, ctx, err); o.Error == nil || o.Error.Kind != "duckdb" || !strings.Contains(o.Error.Message, "nowhere") {
		t.Fatalf("missing table: %+v", o.Error)
	}
	if _, err := tl.OpenWriter(ctx, "/etc/x.duckdb", "t", []string{"a"}, ModeAppend); err == nil {
		t.Fatal("a writer outside the data roots opened")
	} else if o := tl.Failure(ctx, ctx, err); o.Error.Kind != "forbidden_path" {
		t.Fatalf("writer outside: %+v", o.Error)
	}
}

// BenchmarkExec is one `SELECT 41 + 1` per task, in the caller's process
// and in a worker of its own room (the runner's way): go test
// ./runner/kinds/duckdb -run '^$' -bench Exec.
func BenchmarkExec(b *testing.B) {
	q := M{"query": "SELECT 41 + 1 AS n"}
	bench := func(b *testing.B, tl *Tool) {
		ws, err := sandbox.NewWorkspace(b.TempDir(), 0, false)
		if err != nil {
			b.Fatal(err)
		}
		ctx := sandbox.WithWorkspace(context.Background(), ws)
		for b.Loop() {
			if o := tl.Exec(ctx, nil, q, 30); o.Error != nil {
				b.Fatal(o.Error)
			}
		}
	}
	b.Run("in-process", func(b *testing.B) { bench(b, New(Options{Threads: 1})) })
	b.Run("worker", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("needs root")
		}
		sb, err := sandbox.New(sandbox.Options{Isolate: true, ControlDir: b.TempDir(), LockDir: b.TempDir(),
			Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("cold", func(b *testing.B) { bench(b, New(Options{Threads: 1, Sandbox: sb})) })
		// One task at a time finds its room ready (it was made while the
		// previous task ran).
		b.Run("warm", func(b *testing.B) {
			root := b.TempDir()
			tl := New(Options{Threads: 1, Sandbox: sb, Warm: 1, Workspaces: func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(root, 0, false) }})
			defer tl.Close()
			bench(b, tl)
		})
	})
}

// With Warm, workers wait in rooms of their own, started ahead of
// demand: a task takes one (its own workspace, not the task's; ws), no
// worker serves two tasks, its room is torn down right after the task's
// answer, a cancelled task's warm worker is killed, and Close kills the
// idle ones.
func TestWarmWorkers(t *testing.T) {
	var mu sync.Mutex
	var made []*sandbox.Workspace
	root := t.TempDir()
	tl, ctx, ws, _ := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{Threads: 1, Warm: 2,
		Workspaces: func() (*sandbox.Workspace, error) {
			w, err := sandbox.NewWorkspace(root, 0, false)
			if err == nil {
				mu.Lock()
				made = append(made, w)
				mu.Unlock()
			}
			return w, err
		}})
	spill := func() string {
		r := ok(t, tl.Exec(ctx, nil, M{"query": "SELECT current_setting('temp_directory') AS d"}, 30))
		return r["rows"].([]any)[0].(M)["d"].(string)
	}
	// The first task waits for the pool's first worker rather than
	// start a room beside it.
	if d := spill(); !strings.HasPrefix(d, root) {
		t.Fatalf("the first task spills in %s, want a warm worker's workspace under %s", d, root)
	}
	idle := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			k := len(tl.pool.ready)
			if k >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d warm workers, want %d", k, n)
			}
		}
	}
	idle(2)
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		idle(1)
		d := spill()
		dir := filepath.Dir(d)
		if strings.HasPrefix(d, ws.Dir) || !strings.HasPrefix(d, root) || seen[dir] {
			t.Fatalf("task %d spills in %s: want a warm worker's own, new workspace under %s (seen %v)", i, d, root, seen)
		}
		seen[dir] = true
		// Torn down right after the task's answer (closeAfter), never
		// handed to another task.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(dir); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the warm worker's workspace %s outlived its task by 10 s", dir)
			}
		}
	}
	// A warm worker dies with its task's context.
	idle(1)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	if o := tl.Exec(cctx, nil, M{"query": "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 3 = 7"}, 60); o.Error == nil || o.Error.Kind != "canceled" {
		t.Fatalf("cancel: %+v", o.Error)
	}
	idle(2)
	tl.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, w := range made {
		if _, err := os.Stat(w.Dir); err == nil {
			t.Errorf("workspace %s of a warm worker is left after Close", w.Dir)
		}
	}
}

// A warm worker is handed out only once its room is set up and it waits
// for its request: at that moment it already runs under its task uid and
// its seccomp filter (a worker handed out right after its exec would
// still be the helper, uid 0, unfiltered), so a task that takes it pays
// none of the room's set-up.
func TestWarmWorkerReadyWhenHandedOut(t *testing.T) {
	root := t.TempDir()
	tl, ctx, _, _ := roomed(t, sandbox.Limits{MemoryBytes: 512 << 20, Processes: 64}, Options{Threads: 1, Warm: 1,
		Workspaces: func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(root, 0, false) }})
	for i := 0; i < 3; i++ {
		p := tl.warmPool()
		p.fill()
		var w *worker
		select {
		case w = <-p.ready:
		case <-time.After(30 * time.Second):
			t.Fatal("no warm worker in 30 s")
		}
		if w == nil {
			t.Fatal("the warm worker failed to start")
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(w.cmd.Process.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		st := string(b)
		if !strings.Contains(st, "\nSeccomp:\t2\n") {
			t.Errorf("worker %d handed out before its seccomp filter: %s", i, st)
		}
		if strings.Contains(st, "\nUid:\t0\t") {
			t.Errorf("worker %d handed out still as uid 0", i)
		}
		if !w.ready {
			t.Errorf("worker %d handed out before its ready message", i)
		}
		w.close()
	}
	// The pool goes on serving tasks.
	ok(t, tl.Exec(ctx, nil, M{"query": "SELECT 1 AS x"}, 30))
}
