//go:build cgo

package duckdb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/sandbox"
)

// A warm worker's prepared database serves exactly one task, and only a
// task confined to the workspace it was prepared for: it is configured
// as the task's own would be (spill directory, allowed directories,
// locked configuration), the task's tables are in it, the next task gets
// a fresh database, and a task of another workspace never sees it.
func TestPreparedDatabaseServesOneMatchingTask(t *testing.T) {
	tl, ctx, ws, _ := confined(t, Options{MemoryLimit: "256MB", Threads: 1})
	prepare := func() {
		t.Helper()
		tl.prepare(ws)
		if tl.pre == nil || tl.pre.conn == nil {
			t.Fatal("no prepared database")
		}
		// A mark left in the prepared database before the task: the task
		// finds it only if it runs there.
		if _, err := tl.pre.conn.ExecContext(context.Background(), "CREATE TABLE prepared_mark AS SELECT 1 AS x"); err != nil {
			t.Fatal(err)
		}
	}
	prepare()
	// Another workspace's task does not get it.
	other, err := sandbox.NewWorkspace(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	octx := sandbox.WithWorkspace(context.Background(), other)
	if o := tl.Exec(octx, nil, M{"query": "SELECT * FROM prepared_mark"}, 30); o.Error == nil {
		t.Fatal("a task of another workspace ran in the prepared database")
	}
	// The matching task runs in it, confined as usual.
	r := ok(t, tl.Exec(ctx, nil, M{"query": "SELECT x, current_setting('temp_directory') AS tmp FROM prepared_mark"}, 30))
	row := r["rows"].([]any)[0].(M)
	if row["x"] != int32(1) && row["x"] != int64(1) {
		t.Fatalf("row %v", row)
	}
	if tmp, _ := row["tmp"].(string); !strings.HasPrefix(tmp, ws) {
		t.Fatalf("temp_directory %q, want under the workspace %s", tmp, ws)
	}
	// Confined as a task's own database: the mark is read (it runs in
	// the prepared one), then the refusals.
	outside := t.TempDir()
	key := filepath.Join(outside, "k")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	prepare()
	if o := tl.Exec(ctx, nil, M{"query": "SELECT x FROM prepared_mark; SELECT * FROM read_text('" + key + "')"}, 30); o.Error == nil ||
		o.Error.Kind != "forbidden_path" || !strings.Contains(o.Error.Message, "statement 2") {
		t.Fatalf("read outside the workspace: %+v, want forbidden_path at statement 2", o.Error)
	}
	prepare()
	if o := tl.Exec(ctx, nil, M{"query": "SELECT x FROM prepared_mark; SET enable_external_access=true"}, 30); o.Error == nil ||
		!strings.Contains(o.Error.Message, "locked") || !strings.Contains(o.Error.Message, "statement 2") {
		t.Fatalf("SET in the prepared database: %+v, want the locked configuration at statement 2", o.Error)
	}
	// Handed out once: the next task's database is a fresh one.
	if o := tl.Exec(ctx, nil, M{"query": "SELECT * FROM prepared_mark"}, 30); o.Error == nil {
		t.Fatal("a second task ran in the prepared database")
	}
	if len(tl.spent) != 3 {
		t.Fatalf("%d prepared databases handed out, want 3", len(tl.spent))
	}
}
