package subscribe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

const confSub = "../../emulators/e2e/testdata/conformance/noetl-v2/subscription"

// ---- fakes -----------------------------------------------------------------

// memBucket is an in-memory Bucket.
type memBucket struct {
	mu   sync.Mutex
	objs map[string][]byte
	fail error
}

func (b *memBucket) Put(_ context.Context, name string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.objs[name] = append([]byte(nil), data...)
	return nil
}

func (b *memBucket) Get(_ context.Context, name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.objs[name]
	if !ok {
		return nil, ErrNoObject
	}
	return d, nil
}

func (b *memBucket) List(_ context.Context, prefix string) ([]Object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Object
	for n, d := range b.objs {
		if strings.HasPrefix(n, prefix) {
			out = append(out, Object{Name: n, Size: int64(len(d))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *memBucket) Delete(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objs, name)
	return nil
}

func (b *memBucket) names(prefix string) []string {
	objs, _ := b.List(context.Background(), prefix)
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

// recBus records request batches; fail makes PublishBatch fail.
type recBus struct {
	mu      sync.Mutex
	batches []types.Batch
	fail    error
}

func (b *recBus) PublishBatch(_ context.Context, x types.Batch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.batches = append(b.batches, x)
	return nil
}

// PublishCommands implements bus.Publisher: starting an execution
// publishes no command, so none is expected.
func (b *recBus) PublishCommands(context.Context, ...types.Command) error {
	return errors.New("recBus: unexpected commands")
}

func (b *recBus) setFail(err error) {
	b.mu.Lock()
	b.fail = err
	b.mu.Unlock()
}

func (b *recBus) executions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, x := range b.batches {
		out = append(out, x.ExecutionID)
	}
	return out
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// prober reports up per downstream name and counts probes.
type prober struct {
	mu    sync.Mutex
	up    bool
	count int
}

func (p *prober) probe(_ context.Context, d dsl.Downstream) (bool, bool) {
	if d.Probe == "passive" {
		return false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	return p.up, true
}

func (p *prober) set(up bool) {
	p.mu.Lock()
	p.up = up
	p.mu.Unlock()
}

type fixture struct {
	t      *testing.T
	st     *memstore.Memory
	bus    *recBus
	bucket *memBucket
	clock  *clock
	probe  *prober
	svc    *Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, st: memstore.NewMemory(), bus: &recBus{}, bucket: &memBucket{objs: map[string][]byte{}},
		clock: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, probe: &prober{up: true}}
	src, err := os.ReadFile(filepath.Join(confSub, "sub_ingest_default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.PlaybookPut(context.Background(), store.PlaybookPutParams{Path: "tests/fixtures/sub_ingest_default", Name: "sub_ingest_default", Source: string(src)}); err != nil {
		t.Fatal(err)
	}
	f.svc = &Service{Store: f.st, Bus: f.bus, Playbooks: &catalog.Catalog{Store: f.st, Root: t.TempDir()},
		Buckets: func(name string) Bucket {
			if name != "spool-bucket" {
				t.Errorf("spool bucket %q, want spool-bucket", name)
			}
			return f.bucket
		},
		Probe: f.probe.probe, Now: f.clock.now, Log: slog.New(slog.DiscardHandler)}
	return f
}

// register stores the reference resource with its placeholders
// substituted (edit rewrites the YAML first) and returns the registration.
func (f *fixture) register(edit func(string) string) *Registration {
	f.t.Helper()
	src, err := os.ReadFile(filepath.Join(confSub, "cloudrun_pubsub_stream.subscription.yaml"))
	if err != nil {
		f.t.Fatal(err)
	}
	text, missing := dsl.Substitute(string(src), map[string]string{"PUBSUB_SUBSCRIPTION": "projects/p/subscriptions/stream", "SPOOL_BUCKET": "spool-bucket", "NOETL_SERVER_URL": "http://control.plane"})
	if len(missing) > 0 {
		f.t.Fatalf("missing %v", missing)
	}
	if edit != nil {
		text = edit(text)
	}
	spec, err := dsl.LoadSubscription([]byte(text), "ref")
	if err != nil {
		f.t.Fatal(err)
	}
	rec, err := f.st.SubscriptionPut(context.Background(), store.SubscriptionPutParams{Name: spec.Metadata.Name, Path: spec.Metadata.Path, Source: text,
		PubSubSubscription: spec.SubscriptionPath("p"), Topic: "projects/p/topics/stream", Playbook: spec.Dispatch.Playbook, Delivery: store.DeliveryPush, PushEndpoint: "http://x/push/" + spec.Metadata.Name})
	if err != nil {
		f.t.Fatal(err)
	}
	reg, err := ParseRegistration(rec)
	if err != nil {
		f.t.Fatal(err)
	}
	return reg
}

func msg(i int) Message {
	return Message{ID: fmt.Sprintf("m%d", i), Data: []byte(fmt.Sprintf(`{"seq": %d, "hello": "cloud-run"}`, i)),
		Attributes: map[string]string{"x-idempotency-key": fmt.Sprintf("cr-%d", i)}, PublishTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (f *fixture) handle(reg *Registration, m Message) Result {
	f.t.Helper()
	r, err := f.svc.Handle(context.Background(), reg, m)
	if err != nil {
		f.t.Fatalf("Handle(%s): %v", m.ID, err)
	}
	return r
}

func (f *fixture) execution(id string) map[string]any {
	f.t.Helper()
	rec, err := f.st.ExecutionGet(context.Background(), id)
	if err != nil {
		f.t.Fatalf("execution %s: %v", id, err)
	}
	return rec.State.Workload
}

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

// ---- message → workload ------------------------------------------------------

// TestWorkloadOfReferenceMessage: payload_from message.json merges the body
// at the top, the envelope goes under message, the idempotency key from
// the header directive rides along (noetl-worker build_payload).
func TestWorkloadOfReferenceMessage(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	m := msg(3)
	m.Attributes["X-Trace"] = "keep-me"
	env := Normalize(m)
	plan := Resolve(reg.Spec.Headers, env.Headers)
	w := Workload(env, reg.Spec.Dispatch.PayloadFrom, plan, "subscriptions/cloudrun_pubsub_stream", SourcePubSub)
	want := map[string]any{
		"seq": int64(3), "hello": "cloud-run", "subscription": "subscriptions/cloudrun_pubsub_stream", "source": "pubsub", "idempotency_key": "cr-3",
		"message": map[string]any{
			"id": "m3", "data": map[string]any{"seq": int64(3), "hello": "cloud-run"},
			"headers":    map[string]any{"x-idempotency-key": "cr-3", "x-trace": "keep-me"},
			"attributes": map[string]any{"x-idempotency-key": "cr-3", "X-Trace": "keep-me"},
			"metadata":   map[string]any{"messageId": "m3", "publishTime": "2026-01-02T03:04:05Z", "deliveryAttempt": nil},
		},
	}
	if !reflect.DeepEqual(w, want) {
		a, _ := json.MarshalIndent(w, "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("workload\n%s\nwant\n%s", a, b)
	}
}

func TestWorkloadPayloadFrom(t *testing.T) {
	env := Normalize(Message{ID: "1", Data: []byte(`{"message": "shadowed", "source": "x", "k": 1}`), Attributes: map[string]string{"a": "b"}})
	w := Workload(env, dsl.PayloadJSON, Plan{}, "s", "pubsub")
	if w["k"] != int64(1) || w["source"] != "pubsub" || w["message"].(map[string]any)["id"] != "1" {
		t.Errorf("body keys must not replace message/subscription/source: %v", w)
	}
	if w := Workload(Normalize(Message{ID: "2", Data: []byte("plain text")}), dsl.PayloadJSON, Plan{}, "s", "pubsub"); w["body"] != "plain text" {
		t.Errorf("a non-object body goes under body: %v", w)
	}
	if w := Workload(Normalize(Message{ID: "3", Data: []byte(`[1,2]`)}), dsl.PayloadJSON, Plan{}, "s", "pubsub"); !reflect.DeepEqual(w["body"], []any{int64(1), int64(2)}) {
		t.Errorf("a list body goes under body: %v", w["body"])
	}
	if w := Workload(env, dsl.PayloadBody, Plan{}, "s", "pubsub"); w["body"] != `{"k":1,"message":"shadowed","source":"x"}` {
		t.Errorf("message.body: %v", w["body"])
	}
	if w := Workload(env, dsl.PayloadAttributes, Plan{ContentType: "application/json"}, "s", "pubsub"); w["a"] != "b" || w["content_type"] != "application/json" {
		t.Errorf("message.attributes: %v", w)
	}
	if e := Normalize(Message{ID: "4", Data: []byte{0xff, 'a'}}); e.Data != "\uFFFDa" {
		t.Errorf("invalid UTF-8 body: %q", e.Data)
	}
}

// TestResolveDirectives: only allowlisted headers act, routing values must
// be allowed, an explicit pool wins over priority, W3C trace context and
// allowlisted baggage are extracted.
func TestResolveDirectives(t *testing.T) {
	h := dsl.SubscriptionHeaders{Directives: []dsl.Directive{
		{Header: "x-prio", Controls: dsl.ControlPriority, Map: map[string]string{"high": "fast"}},
		{Header: "x-route", Controls: dsl.ControlPlaybook, Allowed: []string{"domain/a"}},
		{Header: "x-pool", Controls: dsl.ControlExecutionPool, Allowed: []string{"iot"}},
		{Header: "x-key", Controls: dsl.ControlIdempotencyKey},
		{Header: "x-ct", Controls: dsl.ControlContentType},
	}, Trace: dsl.TraceConfig{Propagate: "w3c", BaggageAllowlist: []string{"tenant"}}}
	p := Resolve(h, map[string]any{"x-prio": "high", "x-route": "domain/a", "x-pool": "iot", "x-key": []any{"k1", "k2"}, "x-ct": "text/csv",
		"x-other": "ignored", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "baggage": "tenant=t1, secret=s"})
	if p.Playbook != "domain/a" || p.ExecutionPool != "iot" || p.IdempotencyKey != "k2" || p.ContentType != "text/csv" {
		t.Errorf("plan %+v", p)
	}
	if p.Trace["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || p.Trace["baggage"] != "tenant=t1" {
		t.Errorf("trace %v", p.Trace)
	}
	if len(p.Applied) != 5 {
		t.Errorf("applied %+v", p.Applied)
	}
	p = Resolve(h, map[string]any{"x-prio": "high", "x-route": "domain/evil", "x-pool": "nope"})
	if p.Playbook != "" || p.ExecutionPool != "fast" || p.Trace != nil {
		t.Errorf("disallowed values must not apply, priority maps the pool: %+v", p)
	}
	h.Trace.Propagate = "none"
	if p := Resolve(h, map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}); p.Trace != nil {
		t.Errorf("propagate none extracted %v", p.Trace)
	}
}

// ---- circuit -------------------------------------------------------------------

func TestBreaker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	passive := NewBreaker(dsl.CircuitConfig{TripAfter: 2, ProbeAfterMS: 1000}, dsl.Downstream{Name: "d", Probe: "passive"})
	if passive.Decide(t0) != Dispatch || passive.Failure(t0) || !passive.Failure(t0) || passive.Phase() != Open || passive.Trips() != 1 {
		t.Fatalf("trip after 2: %+v", passive)
	}
	if passive.Decide(t0.Add(999*time.Millisecond)) != Hold {
		t.Error("open before probe_after must hold")
	}
	if passive.Decide(t0.Add(time.Second)) != Probe || passive.Phase() != HalfOpen || passive.Decide(t0.Add(time.Second)) != Hold {
		t.Error("one half-open probe after probe_after")
	}
	passive.Failure(t0.Add(time.Second))
	if passive.Phase() != Open || passive.Decide(t0.Add(1500*time.Millisecond)) != Hold || passive.Decide(t0.Add(2*time.Second)) != Probe {
		t.Error("a failed probe reopens with a new window")
	}
	if !passive.Success() || passive.Phase() != Closed || passive.Decide(t0) != Dispatch || passive.OpenFor(t0) != 0 {
		t.Error("a successful probe closes")
	}
	passive.Failure(t0)
	passive.Success()
	if passive.Failure(t0) {
		t.Error("a success resets the failure count")
	}
	passive.Failure(t0)
	passive.Failure(t0)
	if passive.Decide(t0.Add(time.Second)) != Probe {
		t.Fatal("probe after the window")
	}
	passive.Release()
	if passive.Phase() != Open || passive.Decide(t0.Add(time.Second)) != Probe {
		t.Error("a released half-open test is handed out again")
	}
	active := NewBreaker(dsl.CircuitConfig{TripAfter: 1, ProbeAfterMS: 0}, dsl.Downstream{Name: "cp", Probe: "http", Target: "http://x"})
	active.Failure(t0)
	if active.Decide(t0.Add(time.Hour)) != Hold {
		t.Error("an actively probed circuit stays open until a probe succeeds")
	}
}

// ---- dedup ---------------------------------------------------------------------

// TestRedeliveryStartsNothingNew: the same message twice starts one
// execution, with the id derived from (subscription, message id); other
// messages start their own.
func TestRedeliveryStartsNothingNew(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	r1, r2 := f.handle(reg, msg(1)), f.handle(reg, msg(1))
	want := ExecutionID("cloudrun_pubsub_stream", "msg:projects/p/topics/stream/m1")
	if r1.Outcome != OutcomeStarted || r1.ExecutionID != want || r2.ExecutionID != want {
		t.Fatalf("results %+v %+v; want started %s", r1, r2, want)
	}
	r3 := f.handle(reg, msg(2))
	if r3.ExecutionID == want {
		t.Fatal("another message derived the same id")
	}
	list, err := f.st.ExecutionList(context.Background(), store.ExecutionListParams{})
	if err != nil || len(list) != 2 {
		t.Fatalf("executions %v, %v; want 2", list, err)
	}
	w := f.execution(want)
	if w["seq"] != int64(1) || w["idempotency_key"] != "cr-1" || w["subscription"] != "subscriptions/cloudrun_pubsub_stream" {
		t.Errorf("workload %v", w)
	}
	// The same idempotency key on another message id: a new execution
	// (dedup is not enabled in the resource) ...
	other := msg(1)
	other.ID = "m1-again"
	if f.handle(reg, other).ExecutionID == want {
		t.Error("without dedup.enabled the message id names the execution")
	}
	// ... but with dedup enabled the key wins.
	reg2 := f.register(func(s string) string {
		return strings.Replace(s, "metadata:\n  name: cloudrun_pubsub_stream", "metadata:\n  name: dedup_stream", 1) + "  dedup:\n    enabled: true\n"
	})
	a, b := f.handle(reg2, msg(7)), f.handle(reg2, Message{ID: "zzz", Data: []byte(`{}`), Attributes: map[string]string{"x-idempotency-key": "cr-7"}})
	if a.ExecutionID != b.ExecutionID || a.ExecutionID != ExecutionID("dedup_stream", "key:cr-7") {
		t.Errorf("dedup by idempotency key: %s vs %s", a.ExecutionID, b.ExecutionID)
	}
}

// TestTracePropagated: the message's traceparent is recorded in the
// request event and a sampled caller is honoured.
func TestTracePropagated(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	m := msg(1)
	m.Attributes["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	f.handle(reg, m)
	if len(f.bus.batches) != 1 {
		t.Fatalf("batches %v", f.bus.batches)
	}
	tc, _ := f.bus.batches[0].Events[0].Payload["trace"].(map[string]any)
	if tc["traceparent"] != m.Attributes["traceparent"] {
		t.Errorf("request event payload %v", f.bus.batches[0].Events[0].Payload)
	}
	if tp := f.bus.batches[0].TraceParent; tp != "" && !strings.HasSuffix(tp, "-01") {
		t.Errorf("a sampled caller must make the execution sampled: %s", tp)
	}
}

// ---- spool + circuit -----------------------------------------------------------

func (f *fixture) spooled(name string) []Item {
	f.t.Helper()
	var out []Item
	for _, n := range f.bucket.names(SpoolPrefix(name)) {
		if !strings.HasSuffix(n, ".json") {
			f.t.Errorf("spool object %s is not .json", n)
		}
		d, _ := f.bucket.Get(context.Background(), n)
		it, err := decodeItem(d)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, it)
	}
	return out
}

// TestSpoolWhileControlPlaneDownThenDrain: the probe of the control plane
// fails trip_after times → the circuit opens; messages are written to
// gs://<bucket>/subscriptions/<name>/spool/*.json and acked; when the
// probe succeeds the spool drains in receive order into executions and is
// empty afterwards.
func TestSpoolWhileControlPlaneDownThenDrain(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	ctx := context.Background()
	f.probe.set(false)
	for range 2 {
		if _, err := f.svc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		f.clock.advance(2 * time.Second) // probe_interval_ms
	}
	rep, _ := f.svc.Tick(ctx)
	if got := rep.Subscriptions["cloudrun_pubsub_stream"].Circuit["control_plane"]; got != Open {
		t.Fatalf("circuit %v after 2 failed probes; want open", rep.Subscriptions)
	}
	f.clock.advance(time.Hour) // an actively probed circuit never half-opens on its own
	for i := 1; i <= 5; i++ {
		f.probe.set(false)
		if r := f.handle(reg, msg(i)); r.Outcome != OutcomeSpooled || r.Reason != "circuit_open" {
			t.Fatalf("message %d: %+v; want spooled", i, r)
		}
		f.clock.advance(time.Millisecond)
	}
	items := f.spooled("cloudrun_pubsub_stream")
	if len(items) != 5 || len(f.bus.batches) != 0 {
		t.Fatalf("%d spooled, %d started; want 5 and 0", len(items), len(f.bus.batches))
	}
	for i, it := range items {
		if it.MessageID != fmt.Sprintf("m%d", i+1) || it.IdempotencyKey != fmt.Sprintf("cr-%d", i+1) || it.Downstream != "control_plane" || it.SHA256 == "" {
			t.Errorf("item %d: %+v", i, it)
		}
	}
	f.probe.set(true)
	f.clock.advance(2 * time.Second)
	rep, _ = f.svc.Tick(ctx)
	sr := rep.Subscriptions["cloudrun_pubsub_stream"]
	if sr.Circuit["control_plane"] != Closed || sr.Drain == nil && len(f.spooled("cloudrun_pubsub_stream")) != 0 {
		t.Fatalf("after recovery: %+v", sr)
	}
	if left := f.spooled("cloudrun_pubsub_stream"); len(left) != 0 {
		t.Fatalf("spool not drained: %d left", len(left))
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, ExecutionID("cloudrun_pubsub_stream", fmt.Sprintf("msg:projects/p/topics/stream/m%d", i)))
	}
	if got := f.bus.executions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %v; want %v (receive order)", got, want)
	}
	if w := f.execution(want[4]); w["seq"] != int64(5) || w["hello"] != "cloud-run" {
		t.Errorf("replayed workload %v", w)
	}
	// A redelivery of a replayed message starts nothing new.
	f.handle(reg, msg(5))
	if list, _ := f.st.ExecutionList(ctx, store.ExecutionListParams{}); len(list) != 5 {
		t.Errorf("%d executions; want 5", len(list))
	}
}

var errDown = errs.New(errs.Unavailable, "pubsub: unavailable")

// TestDispatchFailureSpoolsAndPassiveRecovery: with a passive downstream
// the failing launches themselves trip the circuit; every failed message
// is spooled (buffer_and_ack); after probe_after_ms one message is let
// through and its success closes the circuit and drains the backlog
// before it (ordered_then_live).
func TestDispatchFailureSpoolsAndPassiveRecovery(t *testing.T) {
	f := newFixture(t)
	reg := f.register(func(s string) string {
		i := strings.Index(s, "      downstream:")
		j := strings.Index(s, "    retention:")
		return s[:i] + s[j:]
	})
	f.bus.setFail(errDown)
	// m1 fails and is spooled; m2 finds a backlog whose replay fails
	// (the second failure trips the circuit) and queues behind it; m3
	// meets the open circuit.
	for i, want := range []string{"dispatch_failed", "draining", "circuit_open"} {
		if r := f.handle(reg, msg(i+1)); r.Outcome != OutcomeSpooled || r.Reason != want {
			t.Fatalf("message %d: %+v; want spooled (%s)", i+1, r, want)
		}
	}
	f.bus.setFail(nil)
	f.clock.advance(3 * time.Second) // probe_after_ms
	r := f.handle(reg, msg(4))
	if r.Outcome != OutcomeStarted {
		t.Fatalf("half-open probe message: %+v", r)
	}
	if left := f.spooled("cloudrun_pubsub_stream"); len(left) != 0 {
		t.Fatalf("%d items left after recovery", len(left))
	}
	got := f.bus.executions()
	if len(got) != 4 || got[3] != ExecutionID("cloudrun_pubsub_stream", "msg:projects/p/topics/stream/m4") {
		t.Errorf("executions %v; want m1..m3 replayed then m4", got)
	}
}

// TestModeOffAndHybridRefuse: without buffering an open circuit refuses
// (ErrCircuitOpen: Pub/Sub redelivers); hybrid refuses until the outage
// outlasts hybrid_escalate_after_ms, then spools.
func TestModeOffAndHybridRefuse(t *testing.T) {
	for _, mode := range []string{"off", "hybrid"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			reg := f.register(func(s string) string {
				return strings.Replace(s, "mode: buffer_and_ack", "mode: "+mode+"\n    hybrid_escalate_after_ms: 10000", 1)
			})
			f.probe.set(false)
			f.svc.Tick(context.Background())
			f.clock.advance(2 * time.Second)
			f.svc.Tick(context.Background())
			_, err := f.svc.Handle(context.Background(), reg, msg(1))
			if !errors.Is(err, ErrCircuitOpen) || !errs.Is(err, errs.Unavailable) {
				t.Fatalf("Handle = %v; want ErrCircuitOpen", err)
			}
			f.clock.advance(10 * time.Second)
			r, err := f.svc.Handle(context.Background(), reg, msg(1))
			if mode == "off" {
				if !errors.Is(err, ErrCircuitOpen) {
					t.Errorf("mode off after 10 s: %v", err)
				}
			} else if err != nil || r.Outcome != OutcomeSpooled {
				t.Errorf("hybrid after escalation: %+v, %v; want spooled", r, err)
			}
		})
	}
}

// TestPermanentFailureDeadLetters: a playbook that does not exist can
// never start: the message is filed in the DLQ and may be acked.
func TestPermanentFailureDeadLetters(t *testing.T) {
	f := newFixture(t)
	reg := f.register(func(s string) string {
		return strings.Replace(s, "playbook: tests/fixtures/sub_ingest_default", "playbook: tests/fixtures/nowhere", 1)
	})
	r := f.handle(reg, msg(1))
	if r.Outcome != OutcomeDeadLettered || !strings.Contains(r.Reason, "nowhere") {
		t.Fatalf("result %+v", r)
	}
	e, err := f.st.DLQGet(context.Background(), "subscribe-cloudrun_pubsub_stream-m1")
	if err != nil || e.Source != "subscribe" || e.Topic != "projects/p/topics/stream" || e.Unit != string(msg(1).Data) || e.Attributes["x-idempotency-key"] != "cr-1" {
		t.Fatalf("DLQ entry %+v, %v", e, err)
	}
}

// TestSpoolRetention: on_full stop_acking refuses, drop_to_dlq evicts the
// oldest into the dlq prefix (and the DLQ).
func TestSpoolRetention(t *testing.T) {
	for _, onFull := range []string{"stop_acking", "drop_to_dlq"} {
		t.Run(onFull, func(t *testing.T) {
			f := newFixture(t)
			reg := f.register(func(s string) string {
				s = strings.Replace(s, "max_bytes: 67108864", "max_bytes: 2000", 1)
				return strings.Replace(s, "on_full: drop_to_dlq", "on_full: "+onFull, 1)
			})
			f.probe.set(false)
			f.svc.Tick(context.Background())
			f.clock.advance(2 * time.Second)
			f.svc.Tick(context.Background())
			var refused int
			for i := 1; i <= 6; i++ {
				f.clock.advance(time.Millisecond)
				if _, err := f.svc.Handle(context.Background(), reg, msg(i)); err != nil {
					if !errors.Is(err, ErrCircuitOpen) {
						t.Fatal(err)
					}
					refused++
				}
			}
			objs, _ := f.bucket.List(context.Background(), SpoolPrefix("cloudrun_pubsub_stream"))
			if sumSizes(objs) > 2000 {
				t.Errorf("spool holds %d bytes over max_bytes 2000", sumSizes(objs))
			}
			dlq := f.bucket.names(DLQPrefix("cloudrun_pubsub_stream"))
			if onFull == "stop_acking" && (refused == 0 || len(dlq) != 0) {
				t.Errorf("stop_acking: refused %d, dlq %v", refused, dlq)
			}
			if onFull == "drop_to_dlq" {
				if refused != 0 || len(dlq) == 0 || len(dlq)+len(objs) != 6 || !strings.Contains(dlq[0], "-m1.json") {
					t.Errorf("drop_to_dlq: refused %d, dlq %v, spool %d", refused, dlq, len(objs))
				}
				if _, err := f.st.DLQGet(context.Background(), "subscribe-cloudrun_pubsub_stream-m1"); err != nil {
					t.Errorf("evicted m1 not in the DLQ: %v", err)
				}
			}
		})
	}
}

// TestDrainReplayAttempts: an item whose replays keep failing stays
// (global ordering stalls the rest behind it) until max_replay_attempts,
// then goes to the dlq prefix and the rest drains.
func TestDrainReplayAttempts(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	ctx := context.Background()
	f.probe.set(false)
	f.svc.Tick(ctx)
	f.clock.advance(2 * time.Second)
	f.svc.Tick(ctx)
	poison := msg(1)
	poison.Attributes["x-fail"] = "1"
	f.handle(reg, poison)
	f.clock.advance(time.Millisecond)
	f.handle(reg, msg(2))
	f.probe.set(true)
	failing := &failFirst{inner: f.bus, fail: ExecutionID("cloudrun_pubsub_stream", "msg:projects/p/topics/stream/m1")}
	f.svc.Bus = failing
	for i := range 3 { // max_replay_attempts: 3
		f.clock.advance(2 * time.Second)
		rep, _ := f.svc.Tick(ctx)
		d := rep.Subscriptions["cloudrun_pubsub_stream"].Drain
		if i < 2 && (d == nil || d.Remaining != 2 || d.Replayed != 0) {
			t.Fatalf("pass %d: %+v; want both items waiting behind the failing one", i, d)
		}
		if i < 2 {
			continue // each pass's successful probe resets the failure count
		}
		if d == nil || d.DeadLettered != 1 || d.Replayed != 1 || d.Remaining != 0 {
			t.Fatalf("last pass: %+v; want m1 dead-lettered, m2 replayed", d)
		}
	}
	if dlq := f.bucket.names(DLQPrefix("cloudrun_pubsub_stream")); len(dlq) != 1 {
		t.Errorf("dlq objects %v", dlq)
	}
}

type failFirst struct {
	inner *recBus
	fail  string
}

func (b *failFirst) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	return b.inner.PublishCommands(ctx, cmds...)
}

func (b *failFirst) PublishBatch(ctx context.Context, x types.Batch) error {
	if x.ExecutionID == b.fail {
		return errDown
	}
	return b.inner.PublishBatch(ctx, x)
}

// ---- batch dispatch -------------------------------------------------------------

// fakePuller is an in-memory Puller: queue holds the messages available,
// out the ones pulled and neither acked nor nacked (Nack puts them back
// at the head of the queue); acked and nackd record the calls.
type fakePuller struct {
	mu           sync.Mutex
	queue        []Pulled
	out          map[string]Pulled
	acked, nackd []string
	seq          int
}

func (p *fakePuller) Pull(_ context.Context, sub string, n int, _ time.Duration) ([]Pulled, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, len(p.queue))
	out := slices.Clone(p.queue[:n])
	p.queue = p.queue[n:]
	if p.out == nil {
		p.out = map[string]Pulled{}
	}
	for _, m := range out {
		p.out[m.AckID] = m
	}
	return out, nil
}

func (p *fakePuller) Ack(_ context.Context, _ string, ids []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.acked = append(p.acked, ids...)
	for _, id := range ids {
		delete(p.out, id)
	}
	return nil
}

func (p *fakePuller) Nack(_ context.Context, _ string, ids []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nackd = append(p.nackd, ids...)
	var again []Pulled
	for _, id := range ids {
		if m, ok := p.out[id]; ok {
			again = append(again, m)
			delete(p.out, id)
		}
	}
	p.queue = append(again, p.queue...)
	return nil
}

// publish queues a message as Pub/Sub would deliver it (an id, an ack id
// and the publish time).
func (p *fakePuller) publish(data []byte, attrs map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.queue = append(p.queue, Pulled{AckID: fmt.Sprintf("ack-%d", p.seq), Message: Message{ID: fmt.Sprint(p.seq), Data: data,
		Attributes: attrs, PublishTime: time.Now().UTC()}})
}

// TestBatchDispatch: a batch_dispatch registration is pulled on ticks in
// batches of batch_max; each message starts its own execution (a
// redelivered one starts nothing new) and every handled message is acked.
func TestBatchDispatch(t *testing.T) {
	f := newFixture(t)
	reg := f.register(func(s string) string {
		return strings.Replace(s, "    execution_pool: subscription\n", "    execution_pool: subscription\n    batch_dispatch: true\n    batch_max: 2\n", 1)
	})
	if _, err := f.st.SubscriptionPut(context.Background(), store.SubscriptionPutParams{Name: reg.Record.Name, Source: reg.Record.Source,
		PubSubSubscription: reg.Record.PubSubSubscription, Playbook: reg.Record.Playbook, Delivery: store.DeliveryPull}); err != nil {
		t.Fatal(err)
	}
	p := &fakePuller{}
	for i, m := range []Message{msg(1), msg(2), msg(3), msg(2), msg(4)} {
		p.queue = append(p.queue, Pulled{Message: m, AckID: fmt.Sprintf("ack%d", i)})
	}
	f.svc.Puller = p
	rep, err := f.svc.Tick(context.Background())
	if err != nil || rep.Subscriptions[reg.Record.Name].Pulled != 5 {
		t.Fatalf("tick %+v, %v; want 5 pulled", rep, err)
	}
	if len(p.acked) != 5 || len(p.nackd) != 0 {
		t.Errorf("acked %v, nacked %v", p.acked, p.nackd)
	}
	list, _ := f.st.ExecutionList(context.Background(), store.ExecutionListParams{})
	if len(list) != 4 {
		t.Errorf("%d executions; want 4 (m2 twice)", len(list))
	}
	// Refused messages are nacked for redelivery.
	f.bus.setFail(errDown)
	reg2 := f.register(func(s string) string {
		s = strings.Replace(s, "mode: buffer_and_ack", "mode: \"off\"", 1)
		return strings.Replace(s, "    execution_pool: subscription\n", "    execution_pool: subscription\n    batch_dispatch: true\n", 1)
	})
	if _, err := f.st.SubscriptionPut(context.Background(), store.SubscriptionPutParams{Name: reg2.Record.Name, Source: reg2.Record.Source,
		PubSubSubscription: reg2.Record.PubSubSubscription, Playbook: reg2.Record.Playbook, Delivery: store.DeliveryPull}); err != nil {
		t.Fatal(err)
	}
	p.queue = []Pulled{{Message: msg(9), AckID: "ack9"}}
	f.svc.Tick(context.Background())
	if len(p.nackd) != 1 || p.nackd[0] != "ack9" {
		t.Errorf("nacked %v; want ack9", p.nackd)
	}
}

// TestLookupSurvivesStoreOutage: a registration read once is served from
// the instance's memory when the store fails, so the spool keeps working;
// a deleted one is unknown at once.
func TestLookupSurvivesStoreOutage(t *testing.T) {
	f := newFixture(t)
	reg := f.register(nil)
	if _, err := f.svc.Lookup(context.Background(), reg.Record.Name); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(time.Minute)
	f.svc.Store = brokenStore{f.st}
	got, err := f.svc.Lookup(context.Background(), reg.Record.Name)
	if err != nil || got.Record.Name != reg.Record.Name {
		t.Fatalf("Lookup during an outage: %v, %v", got, err)
	}
	f.svc.Store = f.st
	if _, err := f.svc.Lookup(context.Background(), "nobody"); !errors.Is(err, ErrUnknownSubscription) {
		t.Errorf("unknown name: %v", err)
	}
	if err := f.st.SubscriptionDelete(context.Background(), reg.Record.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Lookup(context.Background(), reg.Record.Name); !errors.Is(err, ErrUnknownSubscription) {
		t.Errorf("a deleted registration: %v; want ErrUnknownSubscription", err)
	}
}

type brokenStore struct{ store.Store }

func (brokenStore) SubscriptionGet(context.Context, string) (*store.Subscription, error) {
	return nil, errDown
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDefaultProber: http answers below 500 are up, 5xx and refused
// connections down; tcp connects; passive is not probed.
func TestDefaultProber(t *testing.T) {
	code := 404
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	p := DefaultProber(nil)
	ctx := context.Background()
	check := func(d dsl.Downstream, up, ok bool) {
		t.Helper()
		if gu, gok := p(ctx, d); gu != up || gok != ok {
			t.Errorf("probe %+v = %v, %v; want %v, %v", d, gu, gok, up, ok)
		}
	}
	check(dsl.Downstream{Probe: "http", Target: srv.URL + "/api/health"}, true, true)
	code = 503
	check(dsl.Downstream{Probe: "http", Target: srv.URL}, false, true)
	check(dsl.Downstream{Probe: "http", Target: closedURL}, false, true)
	check(dsl.Downstream{Probe: "tcp", Target: strings.TrimPrefix(srv.URL, "http://")}, true, true)
	check(dsl.Downstream{Probe: "nats", Target: "nats://" + strings.TrimPrefix(closedURL, "http://")}, false, true)
	check(dsl.Downstream{Probe: "passive"}, false, false)
}
