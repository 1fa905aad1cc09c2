//go:build cgo

package duckdb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/types"
)

// confined returns a tool with a data root and the context of a task
// with a workspace (the runner's), and the workspace and data root.
func confined(t *testing.T, o Options) (*Tool, context.Context, string, string) {
	t.Helper()
	ws, err := sandbox.NewWorkspace(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	root := t.TempDir()
	o.DataRoots = []string{root}
	tl := New(o)
	t.Cleanup(tl.Close)
	return tl, sandbox.WithWorkspace(context.Background(), ws), ws.Dir, root
}

// A confined task's SQL reaches files only in its workspace and the data
// roots: the engine's environment, its key files, another directory, a
// URL are refused, and so are database files elsewhere.
func TestConfinedToWorkspace(t *testing.T) {
	tl, ctx, ws, root := confined(t, Options{MemoryLimit: "256MB", Threads: 1, MaxTempBytes: 64 << 20})
	outside := t.TempDir()
	key := filepath.Join(outside, "signing.key")
	if err := os.WriteFile(key, []byte("engine key"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(cfg M) types.Outcome { return tl.Exec(ctx, nil, cfg, 30) }
	for _, q := range []string{
		"SELECT * FROM read_csv('/proc/self/environ', header=false, sep='\\0')",
		"SELECT * FROM read_text('" + key + "')",
		"SELECT * FROM read_text(['.stack/signing.key', '.stack/api.token'])",
		"SELECT * FROM glob('" + outside + "/*')",
		"COPY (SELECT 1 AS x) TO '" + filepath.Join(outside, "out.csv") + "'",
		"COPY (SELECT 1 AS x) TO '/tmp/noetl-duckdb-squat.csv'",
		"ATTACH '" + filepath.Join(outside, "evil.duckdb") + "' AS evil",
		"SELECT * FROM read_csv('http://169.254.169.254/computeMetadata/v1/')",
		"SELECT * FROM read_csv('" + ws + "/../../etc/passwd')",
		"SET enable_external_access=true",
		"SET allowed_directories=['/']",
	} {
		o := run(M{"query": q})
		switch {
		case o.Error == nil:
			t.Errorf("%s: ran", q)
		case strings.HasPrefix(q, "SET"):
			if !strings.Contains(o.Error.Message, "configuration has been locked") {
				t.Errorf("%s: %+v, want the locked configuration", q, o.Error)
			}
		case o.Error.Kind != "forbidden_path" || o.Error.Retryable:
			t.Errorf("%s: %+v, want kind forbidden_path, not retryable", q, o.Error)
		}
	}
	for _, f := range []string{filepath.Join(outside, "out.csv"), filepath.Join(outside, "evil.duckdb"), "/tmp/noetl-duckdb-squat.csv"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	for _, db := range []string{filepath.Join(outside, "x.duckdb"), "/tmp/x.duckdb", "../x.duckdb"} {
		if o := run(M{"database": db, "query": "SELECT 1"}); o.Error == nil || o.Error.Kind != "forbidden_path" {
			t.Errorf("database %s: %+v, want forbidden_path", db, o.Error)
		}
	}
	// The workspace and the data root are usable.
	ok(t, run(M{"query": "COPY (SELECT 42 AS answer) TO '" + filepath.Join(ws, "a.csv") + "'"}))
	r := ok(t, run(M{"database": "task.duckdb", "query": "CREATE TABLE t AS SELECT * FROM read_csv('" + filepath.Join(ws, "a.csv") + "'); SELECT answer FROM t"}))
	if r["rows"].([]any)[0].(M)["answer"] != int64(42) {
		t.Errorf("workspace round trip: %v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "task.duckdb")); err != nil {
		t.Errorf("a relative database is not in the workspace: %v", err)
	}
	ok(t, run(M{"database": filepath.Join(root, "shared.duckdb"), "command": "CREATE TABLE s AS SELECT 1 AS i"}))
	r = ok(t, run(M{"database": filepath.Join(root, "shared.duckdb"), "query": "SELECT count(*) AS n FROM s"}))
	if r["rows"].([]any)[0].(M)["n"] != int64(1) {
		t.Errorf("data root database: %v", r)
	}
	// Spill in the workspace, with the task's limits.
	r = ok(t, run(M{"query": "SELECT current_setting('temp_directory') AS tmp, current_setting('memory_limit') AS mem, current_setting('threads') AS th, current_setting('max_temp_directory_size') AS mt"}))
	row := r["rows"].([]any)[0].(M)
	if !strings.HasPrefix(row["tmp"].(string), ws) || row["th"] != int64(1) || !strings.Contains(row["mem"].(string), "MiB") {
		t.Errorf("settings %v, want spill under %s, 1 thread, a memory limit", row, ws)
	}
}

// A query that needs more memory than its limit and its spill budget
// fails with kind "limit".
func TestMemoryHogIsLimit(t *testing.T) {
	tl, ctx, _, _ := confined(t, Options{MemoryLimit: "32MB", Threads: 1, MaxTempBytes: 1 << 20})
	o := tl.Exec(ctx, nil, M{"query": "SELECT count(*) FROM (SELECT DISTINCT i::VARCHAR || repeat('x', 100) FROM range(3000000) t(i))"}, 60)
	if o.Error == nil || o.Error.Kind != "limit" {
		t.Fatalf("memory hog: %+v, want kind limit", o.Error)
	}
}

// Without a workspace (a tool outside the runner) spill goes to a private
// directory of the tool, never to a shared, world-writable one.
func TestPrivateSpill(t *testing.T) {
	tmp := t.TempDir()
	tl := New(Options{TempDir: tmp})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": "SELECT current_setting('temp_directory') AS tmp"}))
	dir := r["rows"].([]any)[0].(M)["tmp"].(string)
	parent := filepath.Dir(dir)
	fi, err := os.Stat(parent)
	if err != nil || !strings.HasPrefix(parent, filepath.Join(tmp, "noetl-duckdb-")) || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spill %s (parent %v, %v), want a private 0700 directory under %s", dir, fi, err, tmp)
	}
}

// TestDataRootsAdmit: Options.DataRoots (NOETL_RUNNER_DATA_ROOTS in the
// runner) is what a confined task may read besides its workspace: a file
// under a data root is read; without the root the same read is refused
// with forbidden_path.
func TestDataRootsAdmit(t *testing.T) {
	ws, err := sandbox.NewWorkspace(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ctx := sandbox.WithWorkspace(context.Background(), ws)
	root := t.TempDir()
	f := filepath.Join(root, "data.csv")
	if err := os.WriteFile(f, []byte("answer\n42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := M{"query": "SELECT answer FROM read_csv('" + f + "')"}
	with := New(Options{Threads: 1, DataRoots: []string{root}})
	t.Cleanup(with.Close)
	if r := ok(t, with.Exec(ctx, nil, q, 30)); r["rows"].([]any)[0].(M)["answer"] != int64(42) {
		t.Fatalf("read under a data root: %v", r)
	}
	without := New(Options{Threads: 1})
	t.Cleanup(without.Close)
	if o := without.Exec(ctx, nil, q, 30); o.Error == nil || o.Error.Kind != "forbidden_path" {
		t.Fatalf("read outside the data roots: %+v, want forbidden_path", o.Error)
	}
}
