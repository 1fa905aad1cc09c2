package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

const refSubscription = "../../emulators/e2e/testdata/conformance/noetl-v2/subscription/cloudrun_pubsub_stream.subscription.yaml"

// TestSubscriptions: register substitutes the placeholders (--set,
// --from-env), validates locally and posts the resource; list, describe
// and delete map to the api's routes; errors keep the exit codes.
func TestSubscriptions(t *testing.T) {
	f := newFake(t)
	f.reply("POST /subscriptions", 201, map[string]any{"name": "cloudrun_pubsub_stream", "generation": 2, "pubsub_subscription": "projects/p/subscriptions/sub1",
		"delivery": "push", "push_endpoint": "http://127.0.0.1:8680/subscribe/push/cloudrun_pubsub_stream", "playbook": "tests/fixtures/sub_ingest_default", "warnings": []any{}})
	view := map[string]any{"name": "cloudrun_pubsub_stream", "path": "subscriptions/cloudrun_pubsub_stream", "pubsub_subscription": "projects/p/subscriptions/sub1",
		"topic": "projects/p/topics/t1", "delivery": "push", "push_endpoint": "http://127.0.0.1:8680/subscribe/push/cloudrun_pubsub_stream",
		"playbook": "tests/fixtures/sub_ingest_default", "generation": 2, "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:06Z"}
	f.reply("GET /subscriptions", 200, map[string]any{"subscriptions": []any{view}})
	withSource := map[string]any{}
	for k, v := range view {
		withSource[k] = v
	}
	withSource["source"] = "kind: Subscription\n"
	f.reply("GET /subscriptions/cloudrun_pubsub_stream", 200, withSource)
	f.on("DELETE /subscriptions/cloudrun_pubsub_stream", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.reply("DELETE /subscriptions/nope", 404, map[string]any{"error": "subscription nope not registered"})

	// Placeholders without values: exit 2 before any request.
	r := f.cli("subscription", "register", refSubscription, "--set", "PUBSUB_SUBSCRIPTION=projects/p/subscriptions/sub1")
	if r.code != ExitInvalid || !strings.Contains(r.stderr, "${NOETL_SERVER_URL}, ${SPOOL_BUCKET}") || f.count("POST /subscriptions") != 0 {
		t.Errorf("missing placeholders: %+v", r)
	}
	if r := f.cli("subscription", "register", refSubscription, "--set", "novalue"); r.code != ExitInvalid || !strings.Contains(r.stderr, "want NAME=VALUE") {
		t.Errorf("bad --set: %+v", r)
	}
	// An invalid resource: every problem with its line, no request.
	bad := writeFile(t, "bad.yaml", "apiVersion: noetl.io/v1\nkind: Subscription\nmetadata: {name: x}\nspec:\n  source: nats\n  subscription: sub1\n  dispatch: {playbook: p}\n")
	if r := f.cli("subscription", "register", bad); r.code != ExitInvalid || !strings.Contains(r.stderr, "bad.yaml:5: spec.source:") || f.count("POST /subscriptions") != 0 {
		t.Errorf("invalid resource: %+v", r)
	}
	a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL(), "SPOOL_BUCKET": "spool-bucket", "NOETL_SERVER_URL": "http://127.0.0.1:8680"})
	r = execApp(a, so, se, "subscription", "register", refSubscription, "--set", "PUBSUB_SUBSCRIPTION=projects/p/subscriptions/sub1", "--from-env", "-o", "table")
	if r.code != 0 || r.stdout != "registered subscription cloudrun_pubsub_stream (generation 2): projects/p/subscriptions/sub1 pushes to http://127.0.0.1:8680/subscribe/push/cloudrun_pubsub_stream; each message starts tests/fixtures/sub_ingest_default\n" {
		t.Fatalf("register: %+v", r)
	}
	sent, _ := f.requests()[len(f.requests())-1].Body["resource"].(string)
	if len(dsl.Placeholders(sent)) != 0 || !strings.Contains(sent, "subscription: projects/p/subscriptions/sub1") || !strings.Contains(sent, "bucket: spool-bucket") ||
		!strings.Contains(sent, `target: "http://127.0.0.1:8680/api/health"`) {
		t.Errorf("posted resource:\n%s", sent)
	}
	ref, _ := os.ReadFile(refSubscription)
	if want, _ := dsl.Substitute(string(ref), map[string]string{"PUBSUB_SUBSCRIPTION": "projects/p/subscriptions/sub1", "SPOOL_BUCKET": "spool-bucket", "NOETL_SERVER_URL": "http://127.0.0.1:8680"}); sent != want {
		t.Error("the posted resource is not the file with its placeholders substituted")
	}
	r = f.cli("subscription", "list", "-o", "table")
	if want := "NAME                    PUBSUB SUBSCRIPTION            DELIVERY  PLAYBOOK                           GEN  UPDATED\n" +
		"cloudrun_pubsub_stream  projects/p/subscriptions/sub1  push      tests/fixtures/sub_ingest_default  2    2026-01-02 03:04:06Z\n"; r.stdout != want {
		t.Errorf("list:\n%s", r.stdout)
	}
	r = f.cli("subscriptions", "describe", "cloudrun_pubsub_stream", "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "topic                projects/p/topics/t1\n") || !strings.HasSuffix(r.stdout, "---\nkind: Subscription\n") {
		t.Errorf("describe:\n%s", r.stdout)
	}
	r = f.cli("subscription", "delete", "cloudrun_pubsub_stream")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m["deleted"] != true || f.count("DELETE /subscriptions/cloudrun_pubsub_stream") != 1 {
		t.Errorf("delete: %+v", r)
	}
	if r := f.cli("subscription", "delete", "nope"); r.code != ExitNotFound || !strings.Contains(r.stderr, "subscription nope not registered") {
		t.Errorf("unknown: %+v", r)
	}
	f.reply("POST /subscriptions", 409, map[string]any{"error": "the Pub/Sub subscription projects/p/subscriptions/sub1 pushes to https://x"})
	if r := f.cli("subscription", "register", refSubscription, "--set", "PUBSUB_SUBSCRIPTION=sub1", "--set", "SPOOL_BUCKET=b-1", "--set", "NOETL_SERVER_URL=http://h"); r.code != ExitInvalid || !strings.Contains(r.stderr, "pushes to https://x (409)") {
		t.Errorf("409: %+v", r)
	}
}

// TestValidateSubscription: validate and lint accept subscription
// resources (placeholders are warnings) and reject bad ones with lines.
func TestValidateSubscription(t *testing.T) {
	f := newFake(t)
	r := f.cli("validate", refSubscription)
	if r.code != 0 || !strings.Contains(r.stdout, "ok (subscription cloudrun_pubsub_stream: ${PUBSUB_SUBSCRIPTION} → tests/fixtures/sub_ingest_default)") ||
		!strings.Contains(r.stderr, "warning: placeholder ${SPOOL_BUCKET} must be substituted before registration") {
		t.Errorf("validate: %+v", r)
	}
	bad := writeFile(t, "bad.yaml", "apiVersion: noetl.io/v1\nkind: Subscription\nmetadata: {name: x}\nspec:\n  source: pubsub\n  subscription: sub1\n  dispatch: {playbook: p}\n  spool: {mode: buffer_and_ack}\n")
	if r := f.cli("validate", bad); r.code != ExitInvalid || !strings.Contains(r.stderr, "bad.yaml:8: spec.spool.bucket: spool.mode buffer_and_ack needs a bucket") {
		t.Errorf("validate bad: %+v", r)
	}
	r = f.cli("lint", refSubscription)
	if r.code != 0 || !strings.Contains(r.stdout, "cloudrun_pubsub_stream.subscription.yaml: 6 finding(s)") {
		t.Errorf("lint: %+v", r)
	}
}
