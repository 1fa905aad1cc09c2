package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
)

// The result tier's verify and repair on the stack (docs/resilience.md "Repair"): a
// result object replaced behind its reference is refused by generation
// and found by the scrub (`noetl results verify`, recorded as a
// result.lost event); `noetl results repair` re-derives a deleted, then a
// replaced, duckdb table from its recorded inputs (the same sha256, a new
// generation that reads accept), and refuses a postgres write's result,
// naming why.
func TestScrubAndRepairResults(t *testing.T) {
	RequireStack(t)
	ctx := context.Background()
	table := "repair_e2e_" + randSuffix()
	c := pgConn(t)
	if _, err := c.Exec(ctx, "CREATE TABLE "+table+" (i int, s text)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) }()
	src := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: scrub_repair}
workflow:
  - step: make
    tool: {kind: duckdb, query: "SELECT i, 'row ' || i AS s FROM range(20000) t(i) ORDER BY i"}
    next: {arcs: [{step: write}]}
  - step: write
    tool: {kind: postgres, connection: "{{ workload.pg_dsn }}", command: "INSERT INTO %s SELECT g, 'row ' || g FROM generate_series(1, 4000) g RETURNING *"}
`, table)
	id := startInline(t, src, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN")})
	st := waitStatus(t, id, 120*time.Second)
	if st["status"] != "ok" {
		t.Fatalf("execution %v: %v", st["status"], st["failures"])
	}
	ref := func(step string) map[string]any {
		t.Helper()
		r, _ := st["results"].(map[string]any)[step].(map[string]any)
		inner, _ := r["$ref"].(map[string]any)
		if inner == nil || inner["generation"] == nil || inner["sha256"] == nil {
			t.Fatalf("step %s's result is not a reference with a generation and a sha256: %v", step, r)
		}
		return inner
	}
	made, wrote := ref("make"), ref("write")
	if made["format"] != "feather" {
		t.Fatalf("make's result %v, want a Feather table", made)
	}
	gcs, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	bucket := gcs.Bucket(os.Getenv("NOETL_RESULTS_BUCKET"))
	// readRef reads make's result through its reference (its recorded
	// generation and digests), as a child execution's step does: the
	// step's status, and its error when it failed.
	child := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: scrub_repair_reader}\nworkflow:\n  - step: read\n    tool: {kind: artifact, action: get, input: {result_ref: \"{{ workload.ref }}\"}}\n"
	readRef := func() (string, string) {
		t.Helper()
		cid := stackToken().startAs(t, child, map[string]any{"ref": map[string]any{"$ref": made}}, map[string]any{"parent_id": id})
		v := waitEnd(t, cid)
		if v["status"] == "ok" {
			return "ok", ""
		}
		_, msg := stepError(t, v, "read")
		return fmt.Sprint(v["status"]), msg
	}
	rows := func() int {
		t.Helper()
		code, got := apiDo(t, http.MethodGet, "/results?urn="+url.QueryEscape(made["uri"].(string)), nil)
		v, _ := got["value"].(map[string]any)
		r, _ := v["rows"].([]any)
		if code != http.StatusOK {
			t.Fatalf("GET the result by its URN: %d %v", code, got)
		}
		return len(r)
	}
	verify := func() (cliResult, map[string]any) {
		t.Helper()
		r := noetlCLI(t, "results", "verify", "--execution", id, "-o", "json")
		var rep map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("results verify: exit %d, %s %s", r.code, r.stdout, r.stderr)
		}
		return r, rep
	}
	lostKinds := func(rep map[string]any) map[string]string {
		out := map[string]string{}
		l, _ := rep["lost"].([]any)
		for _, x := range l {
			m := x.(map[string]any)
			out[m["uri"].(string)] = m["lost"].(string)
		}
		return out
	}

	// Intact: the scrub reads both results and finds nothing. It finds
	// the references in the execution's event read model, which the
	// materialize function writes after the status (under delivery chaos
	// up to seconds later): wait until it holds both.
	intact, rep := verify()
	for deadline := time.Now().Add(60 * time.Second); intact.code == 0 && asInt(rep["results"]) < 2 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		intact, rep = verify()
	}
	if intact.code != 0 || asInt(rep["intact"]) != 2 || asInt(rep["results"]) != 2 {
		t.Fatalf("scrub of an intact execution: exit %d %v", intact.code, rep)
	}
	if r := noetlCLI(t, "results", "repair", made["uri"].(string)); r.code != 2 || !strings.Contains(r.stderr, "intact") {
		t.Fatalf("repair of an intact result: exit %d %s", r.code, r.stderr)
	}

	// Deleted, then repaired from its recorded inputs.
	if err := bucket.Object(made["key"].(string)).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if st, msg := readRef(); st != "failed" || !strings.Contains(msg, "result lost") {
		t.Fatalf("read of the deleted result: %s %s", st, msg)
	}
	r := noetlCLI(t, "results", "repair", made["uri"].(string), "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "repaired") {
		t.Fatalf("repair of the deleted duckdb result: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if st, msg := readRef(); st != "ok" || rows() != 20000 {
		t.Fatalf("read of the repaired result: %s %s (%d rows by URN)", st, msg, rows())
	}
	attrs, err := bucket.Object(made["key"].(string)).Attrs(ctx)
	if err != nil || attrs.Generation == asInt64(made["generation"]) || attrs.Metadata["noetl-repairs"] != fmt.Sprint(made["generation"]) {
		t.Fatalf("the repaired object: %+v %v, want a new generation marked noetl-repairs=%v", attrs, err, made["generation"])
	}

	// Replaced behind its reference (same size, other bytes): refused by
	// generation, found by the scrub and recorded; repaired again.
	orig, err := io.ReadAll(must(bucket.Object(made["key"].(string)).NewReader(ctx)))
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(orig, []byte("row 19999"), []byte("row 19998"), 1)
	w := bucket.Object(made["key"].(string)).NewWriter(ctx)
	w.ContentType = "application/vnd.apache.arrow.file"
	if _, err := w.Write(forged); err != nil || w.Close() != nil {
		t.Fatalf("tamper: %v", err)
	}
	if st, msg := readRef(); st != "failed" || !strings.Contains(msg, "not the generation the reference records") {
		t.Fatalf("read of the replaced result: %s %s, want it refused by generation", st, msg)
	}
	rv, rep := verify()
	if lk := lostKinds(rep); rv.code != 1 || lk[made["uri"].(string)] != "replaced" || len(lk) != 1 {
		t.Fatalf("scrub after the replacement: exit %d lost %v", rv.code, lk)
	}
	deadline := time.Now().Add(30 * time.Second)
	for Count(fetchEvents(t, id), "result.lost", "") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scrub recorded no result.lost event in the execution's log")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := noetlCLI(t, "results", "repair", made["uri"].(string), "-o", "table"); r.code != 0 {
		t.Fatalf("repair of the replaced duckdb result: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if st, msg := readRef(); st != "ok" || rows() != 20000 {
		t.Fatalf("read after the second repair: %s %s", st, msg)
	}

	// A postgres write's result: refused, naming the rule.
	if err := bucket.Object(wrote["key"].(string)).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	r = noetlCLI(t, "results", "repair", wrote["uri"].(string))
	if r.code != 2 || !strings.Contains(r.stderr, "kind postgres") || !strings.Contains(r.stderr, "side-effect barrier") {
		t.Fatalf("repair of a postgres write: exit %d %s", r.code, r.stderr)
	}
	if n := pgCount(t, c, "SELECT count(*) FROM "+table); n != 4000 {
		t.Fatalf("%d rows in %s, want 4000 (the write ran once)", n, table)
	}
	// The scrub now finds the postgres result gone, and the duckdb one
	// (repaired) intact.
	rv, rep = verify()
	if lk := lostKinds(rep); rv.code != 1 || len(lk) != 1 || lk[wrote["uri"].(string)] != "gone" || asInt(rep["intact"]) != 1 {
		t.Fatalf("final scrub: exit %d %v", rv.code, rep)
	}
	evs := Events(t, id)
	if Count(evs, "result.repaired", "make") != 2 {
		t.Fatalf("%d result.repaired events of make, want 2", Count(evs, "result.repaired", "make"))
	}
}

func asInt64(v any) int64 { return asInt(v) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
