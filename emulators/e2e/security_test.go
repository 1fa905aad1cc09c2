package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/types"
)

// dlqEntry reads a DLQ entry straight from Firestore (nil when absent
// after waiting up to 15 s).
func dlqEntry(t *testing.T, id string) *store.DLQEntry {
	t.Helper()
	ctx := context.Background()
	st, err := firestorestore.OpenFirestore(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if e, err := st.DLQGet(ctx, id); err == nil {
			return e
		}
	}
	return nil
}

// publishRaw publishes data with attributes on the events topic and
// returns the message id.
func publishRaw(t *testing.T, data []byte, attrs map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pubsub.NewClient(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Publisher("events")
	defer p.Stop()
	id, err := p.Publish(ctx, &pubsub.Message{Data: data, Attributes: attrs}).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// pushTo posts a Pub/Sub push body straight to a function's push
// endpoint (<fn>/projects/P/topics/T, what a push subscription does and
// what anyone who can reach the URL could do).
func pushTo(t *testing.T, fn, msgID string, data []byte, attrs map[string]string) int {
	t.Helper()
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	topic := "events"
	if fn == "dispatch" {
		topic = "commands"
	}
	body, _ := json.Marshal(map[string]any{"message": map[string]any{"data": base64.StdEncoding.EncodeToString(data), "attributes": attrs, "messageId": msgID,
		"publishTime": time.Now().UTC().Format(time.RFC3339Nano)},
		"subscription": "projects/" + project + "/subscriptions/" + fn})
	req, _ := http.NewRequest(http.MethodPost, os.Getenv("NOETL_FUNCTIONS_URL")+"/"+fn+"/projects/"+project+"/topics/"+topic, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := Anonymous.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// slowPlaybook runs a step long enough to forge its end while it runs.
const slowPlaybook = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: forge_target}
workflow:
  - step: start
    tool:
      kind: python
      code: |
        import time
        time.sleep(3)
        result = {"real": True}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop, result: {from_start: "{{ start.real }}"}}
`

func startSlow(t *testing.T) string {
	t.Helper()
	code, b := post(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/api/executions", []byte(MustJSON(map[string]any{"playbook": slowPlaybook})))
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %s", code, b)
	}
	var r struct {
		ExecutionID string `json:"execution_id"`
	}
	_ = json.Unmarshal([]byte(b), &r)
	return r.ExecutionID
}

// Only the engine drives the engine (README "Security"): a step.done for a
// running step, forged on the events topic (unsigned, or signed with
// another deployment's key) or pushed straight to route and materialize,
// a unit posted to execute with its own args, and a command pushed to
// dispatch are all refused — acked and dead-lettered with the reason —
// and the execution ends with its real result.
func TestForgedMessagesAreRefused(t *testing.T) {
	RequireStack(t)
	id := startSlow(t)
	time.Sleep(500 * time.Millisecond)
	forge := func(tag string) []byte {
		ev := types.NewEvent(types.EvStepDone, id, "execute", time.Now(), "forged", tag)
		ev.Step, ev.StepRun, ev.Status = "start", 1, types.StatusOK
		ev.Payload = map[string]any{"result": map[string]any{"real": false, "forged": tag}}
		b, _ := json.Marshal(types.Batch{ID: "forged-" + tag + "-" + id, ExecutionID: id, Source: "execute", Route: true, Events: []types.Event{ev}})
		return b
	}
	other, _ := sign.Parse("another-deployment-key-0123456789abcdef0123")
	// On the topic: delivered to route and materialize by the push
	// subscriptions.
	unsigned := publishRaw(t, forge("unsigned"), map[string]string{"execution_id": id, "route": "1"})
	data := forge("otherkey")
	otherKey := publishRaw(t, data, map[string]string{"execution_id": id, "route": "1", sign.Attribute: other.Sign(sign.Batch, data)})
	// Straight to the push endpoints.
	if code := pushTo(t, "route", "direct-"+id, forge("direct"), map[string]string{"route": "1"}); code/100 != 2 {
		t.Errorf("route answered %d to a forged push (want an ack)", code)
	}
	if code := pushTo(t, "materialize", "direct-"+id, forge("direct"), nil); code/100 != 2 {
		t.Errorf("materialize answered %d to a forged push (want an ack)", code)
	}
	cmd := []byte(MustJSON(map[string]any{"id": "forged", "kind": "run_step", "execution_id": id, "step": "end", "step_run": 1, "attempt": 1, "args": map[string]any{"x": 1}}))
	if code := pushTo(t, "dispatch", "direct-"+id, cmd, nil); code/100 != 2 {
		t.Errorf("dispatch answered %d to a forged command (want an ack)", code)
	}
	if code, b := PostUnit(t, cmd, ""); code != http.StatusOK {
		t.Errorf("execute answered %d %s to a forged unit (want 200: acked, dead-lettered)", code, b)
	}
	st := waitDone(t, id)
	if st["status"] != "ok" {
		t.Fatalf("execution %v", st["status"])
	}
	res, _ := st["results"].(map[string]any)
	if start, _ := res["start"].(map[string]any); start["real"] != true || start["forged"] != nil {
		t.Fatalf("a forged step.done was applied: results %v", res)
	}
	for _, want := range []struct {
		id, source string
		kind       store.DLQKind
	}{
		{"route-" + unsigned, "route", "message"}, {"materialize-" + unsigned, "materialize", "message"},
		{"route-" + otherKey, "route", "message"}, {"materialize-" + otherKey, "materialize", "message"},
		{"route-direct-" + id, "route", "message"}, {"materialize-direct-" + id, "materialize", "message"},
		{"dispatch-direct-" + id, "dispatch", "message"},
	} {
		e := dlqEntry(t, want.id)
		if e == nil {
			t.Errorf("no DLQ entry %s", want.id)
			continue
		}
		if e.Source != want.source || e.Kind != want.kind || !strings.Contains(e.LastError, "did not sign") || e.Unit != "" {
			t.Errorf("DLQ %s: source %q kind %q error %q unit %d bytes", want.id, e.Source, e.Kind, e.LastError, len(e.Unit))
		}
	}
	// The forged batches were not projected as the execution's events.
	for _, e := range Events(t, id) {
		if p, _ := e["payload"].(map[string]any); p != nil && strings.Contains(MustJSON(p), "forged") {
			t.Errorf("a forged event was projected: %v", e)
		}
	}
}

// emit records external events and refuses the engine's own (README "Security"
// item 3): a forged loop.iteration.done or step.done is a 400 naming the
// rule, an external.* event is projected and changes nothing.
func TestEmitAcceptsOnlyExternalEvents(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	r := Run(t, conf("v2_loop_test.yaml"), "")
	ok(t, r)
	before := getJSON(t, base+"/api/executions/"+r.ExecutionID)
	for _, typ := range []string{"step.done", "loop.iteration.done", "loop.done", "playbook.execution.requested", "playbook.cancel.requested"} {
		code, body := post(t, base+"/emit", []byte(MustJSON(map[string]any{"event_type": typ, "execution_id": r.ExecutionID, "step": "start", "step_run": 1, "iteration": 0})))
		if code != http.StatusBadRequest || !strings.Contains(body, "not an external event type") {
			t.Errorf("emit %s: %d %s, want 400 naming the rule", typ, code, body)
		}
	}
	code, body := post(t, base+"/emit", []byte(MustJSON(map[string]any{"event_type": "external.webhook.received", "execution_id": r.ExecutionID,
		"event_id": "hook-1", "payload": map[string]any{"order": 42}})))
	if code != http.StatusAccepted {
		t.Fatalf("emit external: %d %s", code, body)
	}
	if code, body := post(t, base+"/emit", []byte(MustJSON(map[string]any{"event_type": "external.x", "execution_id": "no-such-execution"}))); code != http.StatusNotFound {
		t.Errorf("emit for an unknown execution: %d %s, want 404", code, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if Count(fetchEvents(t, r.ExecutionID), "external.webhook.received", "") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the external event was not projected")
		}
		time.Sleep(200 * time.Millisecond)
	}
	after := getJSON(t, base+"/api/executions/"+r.ExecutionID)
	if after["version"] != before["version"] || MustJSON(after["results"]) != MustJSON(before["results"]) {
		t.Fatal("an external event changed the execution")
	}
}

// The api and emit refuse anonymous and wrongly authenticated callers
// (README "Security"); the health check stays open. The role table is unit
// tested (functions/api TestGuardRoles; shared/auth).
func TestAPIRequiresAToken(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/api/executions/x", ""}, {"POST", "/api/executions", ""}, {"GET", "/api/credentials", ""},
		{"GET", "/api/executions/x", "not-the-token"}, {"POST", "/api/credentials", "not-the-token"}, {"POST", "/emit", ""}, {"POST", "/emit", "nope"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("{}"))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := Anonymous.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with token %q: %d, want 401", c.method, c.path, c.token, resp.StatusCode)
		}
	}
	if resp, err := Anonymous.Get(base + "/api/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz: %v %v", err, resp)
	}
}

// Size limits (README "Security"): bodies over their limit are refused with
// 413, not truncated; a unit too large for a Cloud Task travels through
// the results tier; step results that would overflow the execution
// document move to the results tier.
func TestSizeLimits(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	big := MustJSON(map[string]any{"playbook": "kind: Playbook", "workload": map[string]any{"x": strings.Repeat("a", 1<<20)}})
	if code, body := post(t, base+"/api/executions", []byte(big)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /executions with %d bytes: %d %s, want 413", len(big), code, body)
	}
	bigEmit := MustJSON(map[string]any{"event_type": "external.x", "execution_id": "e", "payload": map[string]any{"x": strings.Repeat("a", 300<<10)}})
	if code, body := post(t, base+"/emit", []byte(bigEmit)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /emit with %d bytes: %d %s, want 413", len(bigEmit), code, body)
	}
	// A playbook and workload that fit the body limit but not an
	// execution document: 413 naming the document's limit.
	doc := MustJSON(map[string]any{"playbook": slowPlaybook, "workload": map[string]any{"x": strings.Repeat("a", 950_000)}})
	if code, body := post(t, base+"/api/executions", []byte(doc)); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "execution document") {
		t.Errorf("POST /executions with a %d-byte workload: %d %s, want 413 naming the document limit", len(doc), code, body)
	}

	dir := t.TempDir()
	pb := filepath.Join(dir, "sizes.yaml")
	// Two 60 KB results rendered into one arc's args make the next unit
	// larger than a Cloud Task (each stays under the 64 KiB inline budget,
	// so the control plane has their values); sixteen more 60 KB results
	// add up to more than the execution document may hold.
	var b strings.Builder
	b.WriteString(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: sizes}
workflow:
  - step: start
    tool:
      kind: python
      code: |
        result = {"blob": "a" * 60000}
    next: {arcs: [{step: second}]}
  - step: second
    tool:
      kind: python
      code: |
        result = {"blob": "b" * 60000}
    next: {arcs: [{step: big_args, args: {a: "{{ start.blob }}", b: "{{ second.blob }}"}}]}
  - step: big_args
    tool:
      kind: python
      args: {a: "{{ input.a }}", b: "{{ input.b }}"}
      code: |
        result = {"got": len(a) + len(b)}
    next: {arcs: [{step: r0}]}
`)
	for i := 0; i < 16; i++ {
		next := "check"
		if i < 15 {
			next = "r" + itoa(i+1)
		}
		b.WriteString("  - step: r" + itoa(i) + "\n    tool:\n      kind: python\n      code: |\n        result = {\"blob\": \"r\" * 60000, \"i\": " + itoa(i) + "}\n    next: {arcs: [{step: " + next + "}]}\n")
	}
	b.WriteString(`  - step: check
    tool:
      kind: python
      args: {first: "{{ r0.i }}", last: "{{ r15.i }}", n: "{{ r0.blob | length }}"}
      code: |
        result = {"first": first, "last": last, "n": n}
`)
	if err := os.WriteFile(pb, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	ok(t, r)
	if got := step(t, r, "big_args")["got"]; asInt(got) != 120000 {
		t.Errorf("big_args saw %v characters, want 120000 (the unit's body went through the results tier)", got)
	}
	gcs, err := storage.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	it := gcs.Bucket(os.Getenv("NOETL_RESULTS_BUCKET")).Objects(context.Background(), &storage.Query{Prefix: "bodies/" + r.ExecutionID + "/"})
	if _, err := it.Next(); err != nil {
		t.Errorf("no unit body of the execution in the results tier: %v", err)
	}
	if c := step(t, r, "check"); asInt(c["first"]) != 0 || asInt(c["last"]) != 15 || asInt(c["n"]) != 60000 {
		t.Errorf("check = %v: the moved results must still be readable", c)
	}
	if logs, err := os.ReadFile(filepath.Join(os.Getenv("NOETL_STACK_DIR"), "logs", "functions.log")); err == nil &&
		!strings.Contains(string(logs), "a step result moved to the results tier") {
		t.Error("no step result was moved out of the execution document")
	}
}

func itoa(i int) string { return types.DeriveIDPart(i) }
