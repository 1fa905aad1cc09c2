package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/emulators/stack"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Resilience on the emulator stack (README "Resilience"): cancellation, the DLQ with
// replay and discard, a crash after a side effect (the side-effect
// barrier), hand-off before the dispatch deadline, timeouts, failure
// policies and compensation. Faults are targeted at one execution through
// its workload (_noetl_faults, honoured only on the local stack).

// apiDo calls the api and decodes its JSON answer.
func apiDo(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader([]byte(MustJSON(body)))
	}
	var raw []byte
	if rd != nil {
		raw, _ = io.ReadAll(rd)
	}
	// The functions host may be restarting (tests inject crashes): retry
	// connection errors for a while.
	var resp *http.Response
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, err := http.NewRequest(method, os.Getenv("NOETL_FUNCTIONS_URL")+"/api"+path, bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tok := os.Getenv("NOETL_API_TOKEN"); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err = http.DefaultClient.Do(req)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = jsonx.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, m
}

// startInline starts an execution of an inline playbook and returns its id.
func startInline(t *testing.T, src string, workload map[string]any) string {
	t.Helper()
	code, m := apiDo(t, http.MethodPost, "/executions", map[string]any{"playbook": src, "workload": workload})
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, m)
	}
	return m["execution_id"].(string)
}

// waitStatus polls an execution until it is terminal (ok, failed,
// canceled) or timeout passes, and returns its status view.
func waitStatus(t *testing.T, id string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, m := apiDo(t, http.MethodGet, "/executions/"+id, nil)
		switch m["status"] {
		case "ok", "failed", "canceled":
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s still %v after %s: %s", id, m["status"], timeout, MustJSON(m["steps"]))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func pgConn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), os.Getenv("NOETL_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func pgCount(t *testing.T, c *pgx.Conn, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func evTime(t *testing.T, e map[string]any) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, e["timestamp"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A cancel stops the execution at once: status canceled, every active step
// run canceled (events record each), no unit starts afterwards, the
// pending Cloud Tasks are gone, and the child execution is canceled too.
func TestCancelStopsEverything(t *testing.T) {
	RequireStack(t)
	suffix := randSuffix()
	child := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel_child_%s, path: tests/cancel_child_%s}
workflow:
  - step: start
    loop: {in: "{{ range(20) | list }}", iterator: i, spec: {mode: sequential}}
    tool: {kind: python, args: {i: "{{ i }}"}, code: "import time\ntime.sleep(0.5)\nresult = i"}
`, suffix, suffix)
	if code, m := apiDo(t, http.MethodPost, "/playbooks", map[string]any{"playbook": child}); code/100 != 2 {
		t.Fatalf("register child: %d %v", code, m)
	}
	parent := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel_parent}
workflow:
  - step: start
    next: {spec: {mode: inclusive}, arcs: [{step: slow_loop}, {step: call_child}]}
  - step: slow_loop
    loop: {in: "{{ range(40) | list }}", iterator: i, spec: {mode: parallel, max_in_flight: 3}}
    tool: {kind: python, args: {i: "{{ i }}"}, code: "import time\ntime.sleep(0.5)\nresult = i"}
  - step: call_child
    tool: {kind: playbook, path: tests/cancel_child_%s}
`, suffix)
	id := startInline(t, parent, nil)
	time.Sleep(3 * time.Second)
	code, m := apiDo(t, http.MethodPost, "/executions/"+id+"/cancel", map[string]any{"reason": "test"})
	if code != http.StatusAccepted || m["status"] != "canceled" {
		t.Fatalf("cancel: %d %v", code, m)
	}
	canceledAt := time.Now()
	// Status canceled at once.
	if _, st := apiDo(t, http.MethodGet, "/executions/"+id, nil); st["status"] != "canceled" {
		t.Fatalf("status right after cancel: %v", st["status"])
	}
	// A second cancel is a conflict.
	if code, _ := apiDo(t, http.MethodPost, "/executions/"+id+"/cancel", nil); code != http.StatusConflict {
		t.Fatalf("second cancel: %d, want 409", code)
	}
	// The child was canceled too.
	_, list := apiDo(t, http.MethodGet, "/executions?limit=200", nil)
	var childID string
	for _, x := range list["executions"].([]any) {
		e := x.(map[string]any)
		if e["parent_id"] == id {
			childID = e["execution_id"].(string)
		}
	}
	if childID == "" {
		t.Fatal("the child execution was not started before the cancel (timing)")
	}
	if st := waitStatus(t, childID, 10*time.Second); st["status"] != "canceled" {
		t.Fatalf("child status %v, want canceled", st["status"])
	}
	// Units running at the cancel finish their task; none starts later.
	time.Sleep(3 * time.Second)
	evs := Events(t, id)
	grace := canceledAt.Add(time.Second) // the iteration state cache (250 ms) and clock skew
	for _, e := range evs {
		switch e["event_type"] {
		case "loop.iteration.started", "step.started", "task.attempt.started":
			if evTime(t, e).After(grace) {
				t.Fatalf("%s of %v at %s, after the cancel at %s", e["event_type"], e["step"], e["timestamp"], canceledAt.Format(time.RFC3339Nano))
			}
		}
	}
	if n := Count(evs, "step.canceled", ""); n < 2 {
		t.Fatalf("%d step.canceled events, want one per active step run (slow_loop, call_child)", n)
	}
	if Count(evs, "playbook.cancel.requested", "") != 1 || Count(evs, "playbook.finished", "") != 1 {
		t.Fatal("cancel.requested and playbook.finished must be recorded once")
	}
}

// A unit that fails on every delivery is filed in the DLQ after its last
// attempt, its step run parked (the execution stays running); a replay
// runs it again and the execution goes on.
func TestDeadLetterReplayResumes(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: dlq_replay}
workflow:
  - step: start
    tool: {kind: noop, result: {ok: true}}
    next: {arcs: [{step: flaky}]}
  - step: flaky
    tool: {kind: noop, result: {replayed: true}}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop}
`
	id := startInline(t, src, map[string]any{"_noetl_faults": map[string]any{"execute.start@flaky": "error:1"}})
	entry := waitDLQ(t, id, "flaky", 90*time.Second)
	if _, st := apiDo(t, http.MethodGet, "/executions/"+id, nil); st["status"] != "running" {
		t.Fatalf("execution %v while its unit is dead-lettered, want running (parked)", st["status"])
	}
	if entry["kind"] != "unit" || entry["source"] != "execute" || asInt(entry["attempts"]) < 2 || entry["last_error"] == "" {
		t.Fatalf("dlq entry %v", entry)
	}
	dlqID := entry["message_id"].(string)
	if code, m := apiDo(t, http.MethodPost, "/dlq/"+dlqID+"/replay", map[string]any{}); code != http.StatusAccepted {
		t.Fatalf("replay: %d %v", code, m)
	}
	if st := waitStatus(t, id, 60*time.Second); st["status"] != "ok" {
		t.Fatalf("after replay: %v %v", st["status"], st["failures"])
	}
	_, e := apiDo(t, http.MethodGet, "/dlq/"+dlqID, nil)
	if e["status"] != "replayed" {
		t.Fatalf("entry %v after replay", e["status"])
	}
	if code, _ := apiDo(t, http.MethodPost, "/dlq/"+dlqID+"/replay", nil); code != http.StatusConflict {
		t.Fatalf("a second replay: %d, want 409", code)
	}
	evs := Events(t, id)
	if Count(evs, "unit.dead_lettered", "flaky") < 1 {
		t.Fatal("no unit.dead_lettered event")
	}
}

// Discarding a dead-lettered unit fails its parked step run.
func TestDeadLetterDiscardFailsStep(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: dlq_discard}
workflow:
  - step: start
    tool: {kind: noop}
`
	id := startInline(t, src, map[string]any{"_noetl_faults": map[string]any{"execute.start@start": "error:1"}})
	entry := waitDLQ(t, id, "start", 90*time.Second)
	dlqID := entry["message_id"].(string)
	if code, _ := apiDo(t, http.MethodPost, "/dlq/"+dlqID+"/discard", map[string]any{}); code != http.StatusBadRequest {
		t.Fatalf("discard without a reason: %d, want 400", code)
	}
	if code, m := apiDo(t, http.MethodPost, "/dlq/"+dlqID+"/discard", map[string]any{"reason": "bad input"}); code != http.StatusOK {
		t.Fatalf("discard: %d %v", code, m)
	}
	st := waitStatus(t, id, 30*time.Second)
	if st["status"] != "failed" || !strings.Contains(MustJSON(st["failures"]), "bad input") {
		t.Fatalf("after discard: %v %v", st["status"], st["failures"])
	}
}

// waitDLQ waits for the pending DLQ entry of an execution's step.
func waitDLQ(t *testing.T, id, step string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, m := apiDo(t, http.MethodGet, "/dlq?status=pending&limit=1000", nil)
		if list, ok := m["entries"].([]any); ok {
			for _, x := range list {
				e := x.(map[string]any)
				if e["execution_id"] == id && e["step_id"] == step {
					return e
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DLQ entry for %s step %s after %s", id, step, timeout)
		}
		time.Sleep(time.Second)
	}
}

// Poison messages land in the DLQ: a Cloud Task body that never decodes,
// and an event batch that never decodes.
func TestPoisonMessagesAreDeadLettered(t *testing.T) {
	RequireStack(t)
	name := "poison-" + randSuffix()
	req, _ := http.NewRequest(http.MethodPost, os.Getenv("NOETL_FUNCTIONS_URL")+"/execute", strings.NewReader("{not json"))
	req.Header.Set("X-CloudTasks-TaskName", name)
	req.Header.Set("Authorization", ExecuteAuthorization(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("poison unit answered %d, want 200 (acked, dead-lettered)", resp.StatusCode)
	}
	code, e := apiDo(t, http.MethodGet, "/dlq/execute-"+name, nil)
	if code != http.StatusOK || e["source"] != "execute" || e["status"] != "pending" {
		t.Fatalf("dlq entry of the poison unit: %d %v", code, e)
	}
}

// A crash of execute after a postgres INSERT (no upsert) and before the
// ack: the redelivered unit adopts the insert's durable outcome (the
// side-effect barrier) instead of running it again; the row exists once
// and the execution ends ok.
func TestCrashAfterInsertInsertsOnce(t *testing.T) {
	RequireStack(t)
	pg := pgConn(t)
	// The playbook's own table (named apart from the engine's barrier,
	// which the red-team tests look for by name) is dropped at the end.
	table := "insert_once_" + randSuffix()
	if _, err := pg.Exec(context.Background(), "CREATE TABLE "+table+" (id int, note text)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pg.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) })
	src := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: crash_after_insert}
workflow:
  - step: start
    tool:
      - insert:
          kind: postgres
          command: "INSERT INTO %s (id, note) VALUES (1, 'once')"
      - after: {kind: noop, result: {done: true}}
`, table)
	id := startInline(t, src, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN"),
		"_noetl_faults": map[string]any{"execute.after_tool@start": "crash:1"}})
	st := waitStatus(t, id, 90*time.Second)
	if st["status"] != "ok" {
		t.Fatalf("status %v %v", st["status"], st["failures"])
	}
	if n := pgCount(t, pg, "SELECT count(*) FROM "+table); n != 1 {
		t.Fatalf("%d rows, want exactly 1", n)
	}
	evs := Events(t, id)
	adopted := 0
	for _, e := range evs {
		if p, ok := e["payload"].(map[string]any); ok && p["adopted"] == true {
			adopted++
		}
	}
	if adopted == 0 {
		t.Fatal("no attempt adopted its recorded outcome: the crash did not happen, or the insert ran again")
	}
}

// Two deliveries of the same Cloud Task at the same moment run its tools
// once (README "Architecture"): the unit's first task inserts a row without upsert.
func TestConcurrentDuplicateDeliveryRunsOnce(t *testing.T) {
	RequireStack(t)
	pg := pgConn(t)
	table := "dupdeliv_" + randSuffix()
	if _, err := pg.Exec(context.Background(), "CREATE TABLE "+table+" (id int)"); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: duplicate_delivery}
workflow:
  - step: start
    tool: {kind: postgres, command: "INSERT INTO %s (id) VALUES (1)"}
`, table)
	body, headers := captureTask(t, func() string {
		return startInline(t, src, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN")})
	})
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, os.Getenv("NOETL_FUNCTIONS_URL")+"/execute", bytes.NewReader(body))
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("Authorization", ExecuteAuthorization(t))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	var cmd map[string]any
	_ = json.Unmarshal(body, &cmd)
	st := waitStatus(t, cmd["execution_id"].(string), 60*time.Second)
	if st["status"] != "ok" {
		t.Fatalf("status %v %v (deliveries answered %v)", st["status"], st["failures"], codes)
	}
	if n := pgCount(t, pg, "SELECT count(*) FROM "+table); n != 1 {
		t.Fatalf("%d rows after two concurrent deliveries (answers %v), want 1", n, codes)
	}
}

// Long pipelines hand off before the dispatch deadline: with
// executor.spec.handoff_s 1, a 12-page pagination whose pages take 0.3 s
// continues in new units and finishes with every page.
func TestHandOffBeforeDeadline(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: handoff}
executor: {spec: {handoff_s: 1}}
workflow:
  - step: start
    tool:
      - page:
          kind: python
          args: {n: "{{ iter.n | default(0) }}"}
          code: "import time\ntime.sleep(0.3)\nresult = {'n': n + 1}"
          spec:
            policy:
              rules:
                - when: "{{ outcome.result.n < 12 }}"
                  then: {do: jump, to: page, set_iter: {n: "{{ outcome.result.n }}"}}
                - else: {then: {do: break}}
`
	id := startInline(t, src, nil)
	st := waitStatus(t, id, 90*time.Second)
	if st["status"] != "ok" {
		t.Fatalf("status %v %v", st["status"], st["failures"])
	}
	res := st["results"].(map[string]any)["start"].(map[string]any)
	if asInt(res["n"]) != 12 {
		t.Fatalf("result %v, want n 12", res)
	}
	evs := Events(t, id)
	if n := Count(evs, "unit.handed_off", "start"); n < 2 {
		t.Fatalf("%d hand-offs of a 3.6 s pipeline with a 1 s budget, want at least 2", n)
	}
	if n := Count(evs, "task.attempt.started", "start"); n != 12 {
		t.Fatalf("%d page attempts, want 12 (no page re-run across hand-offs)", n)
	}
}

// Timeouts: a tool timeout is an error of kind timeout that policy can
// retry; an execution past its deadline fails; a loop past its total
// budget fails its step.
func TestTimeouts(t *testing.T) {
	RequireStack(t)
	t.Run("tool timeout retried then failing", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: tool_timeout}
workflow:
  - step: start
    tool:
      kind: python
      timeout: 1
      code: "import time\ntime.sleep(5)\nresult = 1"
      spec:
        policy:
          rules:
            - when: "{{ outcome.error.kind == 'timeout' }}"
              then: {do: retry, attempts: 2}
            - else: {then: {do: fail}}
`
		id := startInline(t, src, nil)
		st := waitStatus(t, id, 60*time.Second)
		if st["status"] != "failed" || !strings.Contains(MustJSON(st["steps"]), "timeout") {
			t.Fatalf("status %v steps %v", st["status"], MustJSON(st["steps"]))
		}
		if n := Count(Events(t, id), "task.attempt.failed", "start"); n != 2 {
			t.Fatalf("%d failed attempts, want 2 (retried once)", n)
		}
	})
	t.Run("execution deadline", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: deadline}
executor: {spec: {timeout_s: 2}}
workflow:
  - step: start
    loop: {in: "{{ range(30) | list }}", iterator: i, spec: {mode: sequential}}
    tool: {kind: python, code: "import time\ntime.sleep(0.5)\nresult = 1"}
`
		started := time.Now()
		id := startInline(t, src, nil)
		st := waitStatus(t, id, 30*time.Second)
		if st["status"] != "failed" || !strings.Contains(MustJSON(st["failures"]), "deadline") {
			t.Fatalf("status %v failures %v", st["status"], st["failures"])
		}
		if d := time.Since(started); d > 10*time.Second {
			t.Fatalf("the deadline stopped the execution after %s", d)
		}
	})
	t.Run("loop total budget", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop_budget}
workflow:
  - step: start
    loop: {in: "{{ range(30) | list }}", iterator: i, spec: {mode: sequential, timeout_s: 2}}
    tool: {kind: python, code: "import time\ntime.sleep(0.5)\nresult = 1"}
    next: {arcs: [{step: handled, on: step.failed}]}
  - step: handled
    tool: {kind: noop}
`
		id := startInline(t, src, nil)
		st := waitStatus(t, id, 30*time.Second)
		steps := st["steps"].(map[string]any)
		if steps["handled"] == nil || !strings.Contains(MustJSON(steps["start"]), "timeout") {
			t.Fatalf("steps %s", MustJSON(steps))
		}
	})
}

// Failure policies (NoETL observability spec §8.8): continue routes on after a failed
// step, route_edge sends it to a handler, halt stops the other branches at
// once; on_when_error treats a failing condition as false.
func TestFailurePolicies(t *testing.T) {
	RequireStack(t)
	failing := `  - step: start
    next: {spec: {mode: inclusive}, arcs: [{step: boom}, {step: slow}]}
  - step: boom
    tool: {kind: python, code: "raise ValueError('boom')"}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop}
  - step: slow
    tool: {kind: python, code: "import time\ntime.sleep(6)\nresult = 1"}
  - step: handler
    tool: {kind: noop, result: {handled: "{{ failed_step }}"}}
`
	run := func(t *testing.T, policy string) map[string]any {
		src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: policy}\nexecutor: {spec: {policy: {on_step_fail: \"" + policy + "\"}}}\nworkflow:\n" + failing
		return waitStatus(t, startInline(t, src, nil), 60*time.Second)
	}
	t.Run("continue", func(t *testing.T) {
		st := run(t, "continue")
		steps := st["steps"].(map[string]any)
		if st["status"] != "ok" || steps["after"] == nil || steps["boom"].(map[string]any)["status"] != "failed" {
			t.Fatalf("status %v steps %s", st["status"], MustJSON(steps))
		}
	})
	t.Run("route_edge", func(t *testing.T) {
		st := run(t, "route_edge:handler")
		res := st["results"].(map[string]any)
		if st["status"] != "ok" || MustJSON(res["handler"]) != `{"handled":"boom"}` {
			t.Fatalf("status %v results %s", st["status"], MustJSON(res))
		}
	})
	t.Run("halt", func(t *testing.T) {
		started := time.Now()
		st := run(t, "halt")
		steps := st["steps"].(map[string]any)
		if st["status"] != "failed" || steps["slow"].(map[string]any)["status"] != "canceled" {
			t.Fatalf("status %v steps %s", st["status"], MustJSON(steps))
		}
		if d := time.Since(started); d > 5*time.Second {
			t.Fatalf("halt took %s: the slow branch was waited for", d)
		}
	})
	t.Run("on_when_error", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: when_error}
workflow:
  - step: start
    tool: {kind: noop, result: {n: 1}}
    next:
      arcs:
        - {step: never, when: "{{ start.n + 'x' }}"}
        - {step: fallback}
  - step: never
    tool: {kind: noop}
  - step: fallback
    tool: {kind: noop}
`
		id := startInline(t, src, nil)
		st := waitStatus(t, id, 30*time.Second)
		steps := st["steps"].(map[string]any)
		if st["status"] != "ok" || steps["fallback"] == nil || steps["never"] != nil {
			t.Fatalf("status %v steps %s", st["status"], MustJSON(steps))
		}
		if !strings.Contains(MustJSON(Events(t, id)), "when_errors") {
			t.Fatal("the failing condition is not recorded in next.evaluated")
		}
	})
}

// SAGA rollback (NoETL observability spec §8.7 pattern B): when the execution fails, the
// compensating steps of the completed steps run backwards, once each.
func TestCompensationRunsBackwards(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: saga}
executor: {spec: {policy: {rollback: on_fail}}}
workflow:
  - step: start
    tool: {kind: noop, result: {reserved: 1}}
    compensate: undo_reserve
    next: {arcs: [{step: charge}]}
  - step: charge
    tool: {kind: noop, result: {charged: 2}}
    compensate: refund
    next: {arcs: [{step: confirm}]}
  - step: confirm
    tool: {kind: python, code: "raise RuntimeError('confirm failed')"}
  - step: undo_reserve
    tool: {kind: noop, result: {undid: "{{ compensating }}"}}
  - step: refund
    tool: {kind: noop, result: {undid: "{{ compensating }}"}}
`
	id := startInline(t, src, nil)
	st := waitStatus(t, id, 60*time.Second)
	if st["status"] != "failed" {
		t.Fatalf("status %v", st["status"])
	}
	res := st["results"].(map[string]any)
	if MustJSON(res["refund"]) != `{"undid":"charge"}` || MustJSON(res["undo_reserve"]) != `{"undid":"start"}` {
		t.Fatalf("results %s", MustJSON(res))
	}
	evs := Events(t, id)
	var order []string
	for _, e := range evs {
		if e["event_type"] == "step.started" && (e["step"] == "refund" || e["step"] == "undo_reserve") {
			order = append(order, e["step"].(string))
		}
	}
	if strings.Join(order, ",") != "refund,undo_reserve" {
		t.Fatalf("compensation order %v, want refund then undo_reserve, each once", order)
	}
	if Count(evs, "compensation.started", "") != 1 {
		t.Fatal("compensation.started not recorded once")
	}
}

// captureTask pauses the work queue, runs start (which must create one
// execution), takes the execution's first Cloud Task out of the queue
// (body and headers, as Cloud Tasks would send them), deletes it and
// resumes the queue, so the test can deliver it itself.
func captureTask(t *testing.T, start func() string) ([]byte, map[string]string) {
	t.Helper()
	ctx := context.Background()
	c, err := stack.NewTasksClient(ctx, os.Getenv("CLOUDTASKS_EMULATOR_HOST"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := "projects/" + os.Getenv("GOOGLE_CLOUD_PROJECT") + "/locations/" + os.Getenv("NOETL_LOCATION") + "/queues/work"
	if _, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: queue}); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if _, err := c.ResumeQueue(ctx, &cloudtaskspb.ResumeQueueRequest{Name: queue}); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	id := start()
	prefix := "/tasks/" + types.TaskPrefix(id) + "-"
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		it := c.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: queue, ResponseView: cloudtaskspb.Task_FULL})
		for {
			task, err := it.Next()
			if err != nil {
				break
			}
			if !strings.Contains(task.Name, prefix) {
				continue
			}
			hr := task.GetHttpRequest()
			headers := map[string]string{"X-CloudTasks-TaskName": task.Name[strings.LastIndex(task.Name, "/")+1:], "X-CloudTasks-QueueName": "work"}
			for k, v := range hr.GetHeaders() {
				headers[k] = v
			}
			if err := c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: task.Name}); err != nil {
				t.Fatal(err)
			}
			resume()
			return hr.GetBody(), headers
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no task of execution %s appeared in the paused queue", id)
	return nil, nil
}
