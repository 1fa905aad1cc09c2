package dsl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func refSubscription(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(confDir, "noetl-v2", "subscription", "cloudrun_pubsub_stream.subscription.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestReferenceSubscriptionLoads: the conformance set's resource is
// accepted as written (its ${...} placeholders are warnings), with every
// field read.
func TestReferenceSubscriptionLoads(t *testing.T) {
	src := refSubscription(t)
	if k := ResourceKind(src); k != "Subscription" {
		t.Fatalf("ResourceKind = %q", k)
	}
	s, err := LoadSubscription(src, "ref.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Metadata.Name != "cloudrun_pubsub_stream" || s.Metadata.Path != "subscriptions/cloudrun_pubsub_stream" {
		t.Errorf("metadata %+v", s.Metadata)
	}
	if s.Source != "pubsub" || s.Mode != "pull" || s.Activation != "continuous" || s.PubSubSubscription != "${PUBSUB_SUBSCRIPTION}" {
		t.Errorf("source/mode/activation/subscription = %s/%s/%s/%s", s.Source, s.Mode, s.Activation, s.PubSubSubscription)
	}
	if s.Runtime.Batch != 10 || s.Runtime.TimeoutMS != 10000 || s.Runtime.Pool != "subscription" {
		t.Errorf("runtime %+v", s.Runtime)
	}
	if s.Dispatch.Playbook != "tests/fixtures/sub_ingest_default" || s.Dispatch.PayloadFrom != PayloadJSON || s.Dispatch.BatchDispatch || s.Dispatch.BatchMax != 10 {
		t.Errorf("dispatch %+v", s.Dispatch)
	}
	want := []Directive{{Header: "x-idempotency-key", Controls: ControlIdempotencyKey}}
	if !reflect.DeepEqual(s.Headers.Directives, want) || s.Headers.Trace.Propagate != "w3c" || !s.Headers.Normalize || s.Headers.Passthrough != "data" {
		t.Errorf("headers %+v", s.Headers)
	}
	sp := s.Spool
	if sp.Mode != SpoolBufferAndAck || sp.Backend != "gcs" || sp.Bucket != "${SPOOL_BUCKET}" || sp.Ordering != "global" {
		t.Errorf("spool %+v", sp)
	}
	if sp.Circuit.TripAfter != 2 || sp.Circuit.ProbeAfterMS != 3000 || sp.Circuit.ProbeIntervalMS != 2000 ||
		!reflect.DeepEqual(sp.Circuit.Downstream, []Downstream{{Name: "control_plane", Probe: "http", Target: "${NOETL_SERVER_URL}/api/health"}}) {
		t.Errorf("circuit %+v", sp.Circuit)
	}
	if sp.Retention.MaxBytes != 67108864 || sp.Retention.OnFull != "drop_to_dlq" || sp.Drain.MaxReplayAttempts != 3 || sp.Drain.OnRecovery != "ordered_then_live" {
		t.Errorf("retention/drain %+v %+v", sp.Retention, sp.Drain)
	}
	var placeholders []string
	for _, w := range s.Warnings {
		if strings.Contains(w.Message, "must be substituted before registration") {
			placeholders = append(placeholders, w.Message)
			if w.Line == 0 {
				t.Errorf("placeholder warning without a line: %+v", w)
			}
		}
	}
	if len(placeholders) != 3 {
		t.Errorf("want 3 placeholder warnings, got %v", s.Warnings)
	}
	if got := Placeholders(string(src)); !reflect.DeepEqual(got, []string{"PUBSUB_SUBSCRIPTION", "SPOOL_BUCKET", "NOETL_SERVER_URL"}) {
		t.Errorf("Placeholders = %v", got)
	}
}

func TestSubstitute(t *testing.T) {
	src := refSubscription(t)
	out, missing := Substitute(string(src), map[string]string{"PUBSUB_SUBSCRIPTION": "projects/p1/subscriptions/sub-one", "SPOOL_BUCKET": "spool-bucket"})
	if !reflect.DeepEqual(missing, []string{"NOETL_SERVER_URL"}) {
		t.Errorf("missing = %v", missing)
	}
	out, missing = Substitute(out, map[string]string{"NOETL_SERVER_URL": "http://127.0.0.1:1"})
	if len(missing) != 0 || len(Placeholders(out)) != 0 {
		t.Fatalf("missing %v, left %v", missing, Placeholders(out))
	}
	s, err := LoadSubscription([]byte(out), "sub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.SubscriptionID() != "sub-one" || s.SubscriptionPath("other") != "projects/p1/subscriptions/sub-one" || s.Spool.Bucket != "spool-bucket" ||
		s.Spool.Circuit.Downstream[0].Target != "http://127.0.0.1:1/api/health" {
		t.Errorf("substituted: %s %s %s %+v", s.SubscriptionID(), s.SubscriptionPath("other"), s.Spool.Bucket, s.Spool.Circuit.Downstream)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w.Message, "placeholder") {
			t.Errorf("placeholder warning after substitution: %v", w)
		}
	}
}

func loadSubErr(t *testing.T, src string) *ValidationError {
	t.Helper()
	s, err := LoadSubscription([]byte(src), "test.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) || s != nil {
		t.Fatalf("want a *ValidationError and no subscription, got %v, %+v", err, s)
	}
	return ve
}

// TestSubscriptionProblems: every problem of a bad resource, each with
// its line and path.
func TestSubscriptionProblems(t *testing.T) {
	src := `apiVersion: noetl.io/v1
kind: Subscription
metadata:
  name: "bad name"
spec:
  source: nats
  mode: stream
  subscription: "x"
  auth: my_alias
  stream: ORDERS
  runtime:
    batch: 0
    lanes: 2
  dispatch:
    payload_from: message.xml
  headers:
    directives:
      - header: x-route
        controls: dispatch.playbook
      - header: x-prio
        controls: priority
      - header: x-what
        controls: everything
    trace:
      propagate: zipkin
  spool:
    mode: buffer_and_ack
    backend: nats_object
    path: /tmp/spool
    ordering: random
    circuit:
      trip_after: 0
      downstream:
        - name: cp
          type: http
        - name: db
          type: tcp
          target: "not a host"
    retention:
      on_full: panic
    drain:
      max_replay_attempts: 0
  whatever: 1
`
	ve := loadSubErr(t, src)
	ps := ve.Problems
	find(t, ps, 4, "metadata.name", "metadata.name \"bad name\"")
	find(t, ps, 6, "spec.source", `source "nats" is not supported`)
	find(t, ps, 7, "spec.mode", `mode "stream": want pull or push`)
	find(t, ps, 8, "spec.subscription", `subscription "x"`)
	find(t, ps, 9, "spec.auth", "auth is not supported")
	find(t, ps, 10, "spec.stream", "connection key of NoETL's nats/kafka sources")
	find(t, ps, 12, "spec.runtime.batch", "runtime.batch 0")
	find(t, ps, 13, "spec.runtime.lanes", `unknown runtime key "lanes"`)
	find(t, ps, 14, "spec.dispatch.playbook", "dispatch.playbook is required")
	find(t, ps, 15, "spec.dispatch.payload_from", `payload_from "message.xml"`)
	find(t, ps, 18, "spec.headers.directives[0]", "no non-empty allowed list")
	find(t, ps, 20, "spec.headers.directives[1]", "controls priority but declares no non-empty map")
	find(t, ps, 23, "spec.headers.directives[2].controls", `controls "everything"`)
	find(t, ps, 25, "spec.headers.trace.propagate", `trace.propagate "zipkin"`)
	find(t, ps, 28, "spec.spool.backend", "nats_object is not available here")
	find(t, ps, 29, "spec.spool.path", "local_disk backend")
	find(t, ps, 30, "spec.spool.ordering", `spool.ordering "random"`)
	find(t, ps, 26, "spec.spool.bucket", "needs a bucket")
	find(t, ps, 32, "spec.spool.circuit.trip_after", "trip_after 0")
	find(t, ps, 34, "spec.spool.circuit.downstream[0].target", `"cp" probe http needs a target`)
	find(t, ps, 38, "spec.spool.circuit.downstream[1].target", "must be host:port")
	find(t, ps, 40, "spec.spool.retention.on_full", `retention.on_full "panic"`)
	find(t, ps, 42, "spec.spool.drain.max_replay_attempts", "max_replay_attempts 0")
	find(t, ps, 43, "spec.whatever", `unknown spec key "whatever"`)
	if !strings.Contains(ve.Error(), "test.yaml:6: spec.source:") {
		t.Errorf("Error() does not list file:line: path: %s", ve.Error())
	}
}

func TestSubscriptionRequiredParts(t *testing.T) {
	ve := loadSubErr(t, "apiVersion: noetl.io/v2\nkind: Subscription\nmetadata: {}\nspec:\n  mode: push\n")
	find(t, ve.Problems, 3, "metadata.name", "metadata.name is required")
	find(t, ve.Problems, 4, "spec.source", "spec.source is required")
	find(t, ve.Problems, 4, "spec.subscription", "spec.subscription is required")
	find(t, ve.Problems, 4, "spec.dispatch", "spec.dispatch is required")
	ve = loadSubErr(t, "kind: Playbook\n")
	find(t, ve.Problems, 1, "kind", `kind must be Subscription, got "Playbook"`)
	find(t, ve.Problems, 1, "", "apiVersion is required")
	ve = loadSubErr(t, "spec: [\n")
	if !strings.Contains(ve.Problems[0].Message, "YAML syntax error") {
		t.Errorf("syntax: %v", ve.Problems)
	}
	ve = loadSubErr(t, "")
	find(t, ve.Problems, 1, "", "empty document")
}

// TestSubscriptionMinimal: defaults of a minimal resource (NoETL's,
// except the spool backend gcs) and accepted-but-inert fields as
// warnings.
func TestSubscriptionMinimal(t *testing.T) {
	s, err := LoadSubscription([]byte(`apiVersion: noetl.io/v2
kind: Subscription
metadata: {name: orders}
spec:
  source: pubsub
  mode: push
  subscription: orders-sub
  dispatch:
    playbook: domain/orders
    execution_pool: shared
    batch_dispatch: true
    batch_max: 25
  dedup: {enabled: true}
  limits: {max_in_flight: 5}
  headers:
    directives:
      - {header: X-NoETL-Route, controls: dispatch.playbook, allowed: [domain/a]}
`), "min.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Runtime.Batch != 100 || s.Runtime.TimeoutMS != 1000 || s.Dispatch.PayloadFrom != PayloadJSON || s.Headers.Trace.Propagate != "none" {
		t.Errorf("defaults: %+v %+v %+v", s.Runtime, s.Dispatch, s.Headers)
	}
	if !s.Dispatch.BatchDispatch || s.Dispatch.BatchMax != 25 || s.Dedup == nil || s.Dedup.WindowSecs != 300 {
		t.Errorf("dispatch/dedup: %+v %+v", s.Dispatch, s.Dedup)
	}
	if s.Spool.Mode != SpoolOff || s.Spool.Circuit.TripAfter != 5 || s.Spool.Drain.MaxReplayAttempts != 5 || s.Spool.Retention.MaxBytes != 1<<30 {
		t.Errorf("spool defaults: %+v", s.Spool)
	}
	if got := s.Spool.Circuit.Downstreams(); len(got) != 1 || got[0].Name != "default" || got[0].Probe != "passive" {
		t.Errorf("default downstream: %+v", got)
	}
	if s.Headers.Directives[0].Header != "x-noetl-route" {
		t.Errorf("directive header not lowercased: %+v", s.Headers.Directives)
	}
	var warned []string
	for _, w := range s.Warnings {
		warned = append(warned, w.Path)
	}
	for _, p := range []string{"spec.dispatch.execution_pool", "spec.limits.max_in_flight"} {
		found := false
		for _, w := range warned {
			found = found || w == p
		}
		if !found {
			t.Errorf("no warning at %s (warnings at %v)", p, warned)
		}
	}
	if s.SubscriptionPath("proj") != "projects/proj/subscriptions/orders-sub" {
		t.Errorf("SubscriptionPath = %s", s.SubscriptionPath("proj"))
	}
}

// TestLoadRejectsSubscriptionAsPlaybook: the playbook loader still names
// the resource for what it is.
func TestLoadRejectsSubscriptionAsPlaybook(t *testing.T) {
	_, err := Load(refSubscription(t), "ref.yaml")
	if err == nil || !strings.Contains(err.Error(), "register it through the subscriptions API") {
		t.Fatalf("Load = %v", err)
	}
}

func FuzzLoadSubscription(f *testing.F) {
	if src, err := os.ReadFile(filepath.Join(confDir, "noetl-v2", "subscription", "cloudrun_pubsub_stream.subscription.yaml")); err == nil {
		f.Add(string(src))
	}
	f.Add("kind: Subscription\nspec: {spool: {circuit: {downstream: [{}]}}}\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := LoadSubscription([]byte(src), "fuzz.yaml")
		if (s == nil) == (err == nil) {
			t.Fatalf("want exactly one of subscription and error: %v, %v", s, err)
		}
	})
}

// TestKafkaSubscription: a kafka source reads topic, group and brokers (or
// auth), needs no Pub/Sub subscription and is always pulled (batch
// dispatch, with a warning when not written); its source key is
// kafka:<topic>#<group>. Kafka keys on a pubsub source stay errors.
func TestKafkaSubscription(t *testing.T) {
	src := `apiVersion: noetl.io/v1
kind: Subscription
metadata: {name: k, path: subs/k}
spec:
  source: kafka
  topic: orders
  group: g
  brokers: "a:9092, b:9092"
  dispatch: {playbook: p}
`
	s, err := LoadSubscription([]byte(src), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Topic != "orders" || s.Group != "g" || strings.Join(s.Brokers, ",") != "a:9092,b:9092" || !s.Dispatch.BatchDispatch || s.SourceKey("p") != "kafka:orders#g" {
		t.Fatalf("%+v", s)
	}
	if len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0].Message, "batch dispatch") {
		t.Fatalf("warnings %v", s.Warnings)
	}
	for _, c := range []struct{ edit, want string }{
		{strings.Replace(src, "  topic: orders\n", "", 1), "spec.topic is required"},
		{strings.Replace(src, "  brokers: \"a:9092, b:9092\"\n", "", 1), "needs its brokers"},
		{strings.Replace(src, "a:9092, b:9092", "nohost", 1), "not host:port"},
		{strings.Replace(src, "  group: g\n", "  group: g\n  subscription: s\n", 1), "a kafka source reads spec.topic"},
		{strings.Replace(strings.Replace(src, "source: kafka", "source: pubsub", 1), "  group: g\n", "  group: g\n  subscription: s\n", 1), "topic is a connection key"},
	} {
		_, err := LoadSubscription([]byte(c.edit), "k.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.want, err, c.want)
		}
	}
}
