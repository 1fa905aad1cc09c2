package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/emulators/resultsflow"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/types"
)

// The result tier end to end (README "Stored results and the runner"; at
// 20 MiB, scripts/bench results runs it at 1 GiB): a table produced by DuckDB is streamed into the stack's GCS
// emulator, two steps after it fetch nothing of it (zero opens or reads
// of its object between producer and consumer), and transfer streams it
// from the tier into the stack's PostgreSQL, every row. The worker runs in
// this process with every kind local (resultsflow: the runner holds no
// access to the tier yet).
func TestResultFlowIntoPostgres(t *testing.T) {
	RequireStack(t)
	ctx := context.Background()
	cl, err := storage.NewClient(ctx) // STORAGE_EMULATOR_HOST of .stack/env
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cb := &resultsflow.CountingBackend{Backend: gcsresults.NewGCS(cl, os.Getenv("NOETL_RESULTS_BUCKET"))}
	rs := &results.Store{Backend: cb, Cache: results.NewCache(64 << 20)}
	rows := int64(20<<20) / resultsflow.RowBytes
	table := "result_flow_" + randSuffix()
	dsn := os.Getenv("NOETL_PG_DSN")
	r, err := resultsflow.Run(ctx, cb, rs, rows, dsn, table, t.Logf)
	if err != nil {
		t.Fatalf("flow: %v (%+v)", err, r)
	}
	if r.ReadsBefore != 0 {
		t.Fatalf("the steps that ignore the table opened or read its object %d times", r.ReadsBefore)
	}
	if r.ReadsLoad != 1 {
		t.Fatalf("the consumer opened the object %d times, want 1 (one streamed read)", r.ReadsLoad)
	}
	if r.Transferred != rows || r.TableBytes < 20<<20*9/10 {
		t.Fatalf("transferred %v of %d rows; object %d bytes", r.Transferred, rows, r.TableBytes)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
	var n, sum, long int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(id), count(*) FILTER (WHERE length(payload) > 200 AND name = 'name-' || id) FROM "+table).Scan(&n, &sum, &long); err != nil {
		t.Fatal(err)
	}
	if n != rows || sum != rows*(rows-1)/2 || long != rows {
		t.Fatalf("PostgreSQL holds %d rows (sum of ids %d, %d well-formed), want %d", n, sum, long, rows)
	}
}

// TestResultFlowThroughRunner: the same flow through the deployed
// functions — the duckdb and transfer steps in the runner, which reaches
// the results tier only through the V4 signed URLs execute grants each
// attempt (README "Stored results and the runner"): produce streams its
// table into the object it was granted, load reads the object its
// configuration names, and PostgreSQL holds every row.
func TestResultFlowThroughRunner(t *testing.T) {
	RequireStack(t)
	ctx := context.Background()
	rows := int64(8<<20) / resultsflow.RowBytes
	table := "result_flow_runner_" + randSuffix()
	dsn := os.Getenv("NOETL_PG_DSN")
	pb := filepath.Join(t.TempDir(), "flow.yaml")
	if err := os.WriteFile(pb, []byte(resultsflow.Playbook(rows, dsn, table)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	if r.Code != 0 || r.Status != "ok" {
		t.Fatalf("run: code %d status %q\n%s\n%s", r.Code, r.Status, r.Stdout, r.Stderr)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
	var n, sum int64
	if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(id), 0) FROM "+table).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != rows || sum != rows*(rows-1)/2 {
		t.Fatalf("PostgreSQL holds %d rows (sum of ids %d), want %d", n, sum, rows)
	}
	// The table went through the tier: produce's result is a reference
	// to a Feather object of its own execution, which the transfer read.
	var produced map[string]any
	for _, ev := range Events(t, r.ExecutionID) {
		if p, _ := ev["payload"].(map[string]any); ev["event_type"] == string(types.EvStepDone) && ev["step"] == "produce" {
			produced, _ = p["result"].(map[string]any)
		}
	}
	ref, _ := produced["$ref"].(map[string]any)
	if key, _ := ref["key"].(string); ref["format"] != "feather" || !strings.Contains(key, "/execution="+r.ExecutionID+"/") {
		t.Fatalf("produce's result %v, want a Feather reference of execution %s", produced, r.ExecutionID)
	}
}
