package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// recorded is one POST the test receiver got.
type recorded struct {
	header http.Header
	body   pushBody
	key    string
	seq    int
	status int
	fmtErr error // checkPush's verdict on the request
}

// payload is the data of the scenario's messages.
type payload struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

// receiver is an httptest function endpoint that records every POST and
// answers according to plan.
type receiver struct {
	t     *testing.T
	plan  func(key string, seq, attempt int) int
	delay time.Duration

	mu          sync.Mutex
	reqs        []recorded
	attempts    map[string]int
	inFlight    int
	maxInFlight int
}

func newReceiver(t *testing.T, plan func(key string, seq, attempt int) int) (*receiver, *httptest.Server) {
	r := &receiver{t: t, plan: plan, attempts: map[string]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	fmtErr := checkPush(req, raw)
	var body pushBody
	if err := json.Unmarshal(raw, &body); err != nil {
		r.t.Errorf("receiver: body %q: %v", raw, err)
	}
	var p payload
	_ = json.Unmarshal(body.Message.Data, &p)

	r.mu.Lock()
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	id := fmt.Sprintf("%s/%d", p.Key, p.Seq)
	r.attempts[id]++
	status := http.StatusOK
	if r.plan != nil {
		status = r.plan(p.Key, p.Seq, r.attempts[id])
	}
	r.reqs = append(r.reqs, recorded{header: req.Header.Clone(), body: body, key: p.Key, seq: p.Seq, status: status, fmtErr: fmtErr})
	r.mu.Unlock()

	time.Sleep(r.delay)
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"status":"test answer"}`))
}

// checkPush reports how a request differs from a Pub/Sub push request to
// a push endpoint: a JSON POST to .../projects/<p>/topics/<t>, without
// CloudEvent headers, whose body has exactly the push body's fields.
func checkPush(req *http.Request, raw []byte) error {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		return fmt.Errorf("%s with Content-Type %q", req.Method, req.Header.Get("Content-Type"))
	}
	for k := range req.Header {
		if strings.HasPrefix(strings.ToLower(k), "ce-") {
			return fmt.Errorf("CloudEvent header %s on a push request", k)
		}
	}
	if !pushPath.MatchString(req.URL.Path) {
		return fmt.Errorf("path %q is not a push endpoint .../projects/P/topics/T", req.URL.Path)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	for k := range top {
		if k != "message" && k != "subscription" && k != "deliveryAttempt" {
			return fmt.Errorf("unexpected push body field %q", k)
		}
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(top["message"], &msg); err != nil {
		return err
	}
	for _, k := range []string{"data", "attributes", "messageId", "message_id", "publishTime", "publish_time"} {
		if _, ok := msg[k]; !ok {
			return fmt.Errorf("push message without %q", k)
		}
	}
	return nil
}

var pushPath = regexp.MustCompile(`/projects/[^/]+/topics/[^/]+$`)

func (r *receiver) snapshot() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// scenarioEnv names a fresh topic, ordered subscription and dead-letter
// topic (with a pull subscription) created for one test.
type scenarioEnv struct {
	client              *pubsub.Client
	project             string
	topic, sub, dead    string
	deadSub             string
	cleanup             func()
	publisher           *pubsub.Publisher
	publishedAt, pubIDs map[string]string
}

func newScenario(t *testing.T, ctx context.Context, c *pubsub.Client, project string) *scenarioEnv {
	t.Helper()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	e := &scenarioEnv{client: c, project: project,
		topic: "t-" + suffix, sub: "s-" + suffix, dead: "d-" + suffix, deadSub: "ds-" + suffix}
	tp := func(id string) string { return "projects/" + project + "/topics/" + id }
	sp := func(id string) string { return "projects/" + project + "/subscriptions/" + id }
	for _, id := range []string{e.topic, e.dead} {
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: tp(id)}); err != nil {
			t.Fatalf("create topic %s: %v", id, err)
		}
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: sp(e.sub), Topic: tp(e.topic), AckDeadlineSeconds: 60, EnableMessageOrdering: true}); err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: sp(e.deadSub), Topic: tp(e.dead), AckDeadlineSeconds: 60}); err != nil {
		t.Fatalf("create dead subscription: %v", err)
	}
	e.publisher = c.Publisher(e.topic)
	e.publisher.EnableMessageOrdering = true
	t.Cleanup(func() {
		e.publisher.Stop()
		bg := context.Background()
		for _, s := range []string{e.sub, e.deadSub} {
			_ = c.SubscriptionAdminClient.DeleteSubscription(bg, &pubsubpb.DeleteSubscriptionRequest{Subscription: sp(s)})
		}
		for _, id := range []string{e.topic, e.dead} {
			_ = c.TopicAdminClient.DeleteTopic(bg, &pubsubpb.DeleteTopicRequest{Topic: tp(id)})
		}
	})
	return e
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// publish publishes n messages on each key, interleaving the keys, and
// returns the message IDs by "key/seq".
func (e *scenarioEnv) publish(t *testing.T, ctx context.Context, keys []string, n int) map[string]string {
	t.Helper()
	ids := map[string]string{}
	var results []*pubsub.PublishResult
	var names []string
	for i := 0; i < n; i++ {
		for _, k := range keys {
			data, _ := json.Marshal(payload{Key: k, Seq: i})
			results = append(results, e.publisher.Publish(ctx, &pubsub.Message{
				Data: data, OrderingKey: k,
				Attributes: map[string]string{"traceparent": testTraceparent, "tracestate": "noetl=1", "seq": fmt.Sprint(i)},
			}))
			names = append(names, fmt.Sprintf("%s/%d", k, i))
		}
	}
	for i, r := range results {
		id, err := r.Get(ctx)
		if err != nil {
			t.Fatalf("publish %s: %v", names[i], err)
		}
		ids[names[i]] = id
	}
	return ids
}

// runBridgeScenario checks the bridge end to end against the Pub/Sub server
// behind c (pstest or the emulator): CloudEvent format, per-key ordering
// under failures, retry with growing attempts, and dead-lettering.
func runBridgeScenario(t *testing.T, c *pubsub.Client, project string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newScenario(t, ctx, c, project)

	const n = 20
	keys := []string{"exec-a", "exec-b"}
	// exec-a/5 fails twice (503) then succeeds; exec-b/12 always fails and
	// is dead-lettered after MaxAttempts = 3.
	rcv, srv := newReceiver(t, func(key string, seq, attempt int) int {
		switch {
		case key == "exec-a" && seq == 5 && attempt <= 2:
			return http.StatusServiceUnavailable
		case key == "exec-b" && seq == 12:
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	b, err := NewBridge(BridgeOptions{
		Client: c, Project: project, Subscription: e.sub, Topic: e.topic,
		Endpoint: PushEndpoint(srv.URL+"/route", project, e.topic), DeadLetterTopic: e.dead,
		Concurrency: 4, MaxAttempts: 3, MinBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	bctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(bctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	ids := e.publish(t, ctx, keys, n)
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := b.Stats()
		if st.Delivered == 2*n-1 && st.DeadLettered == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: stats %+v after %d requests", st, len(rcv.snapshot()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := b.Stats(); st.Failed != 2+3 {
		t.Errorf("failed attempts = %d, want 5 (2 for exec-a/5, 3 for exec-b/12)", st.Failed)
	}

	reqs := rcv.snapshot()
	last := map[string]int{}
	attempts := map[string][]int{}
	for _, r := range reqs {
		id := fmt.Sprintf("%s/%d", r.key, r.seq)
		// Order per key: a message is never posted before its predecessor
		// was settled (acked or dead-lettered).
		if prev, ok := last[r.key]; ok && r.seq < prev {
			t.Fatalf("%s posted after %s/%d: out of order", id, r.key, prev)
		} else if ok && r.seq > prev+1 {
			t.Fatalf("%s posted right after %s/%d: a message was skipped", id, r.key, prev)
		}
		last[r.key] = r.seq
		attempts[id] = append(attempts[id], r.body.DeliveryAttempt)

		if r.fmtErr != nil {
			t.Errorf("%s: not a push request: %v", id, r.fmtErr)
		}
		m := r.body.Message
		if m.MessageID != ids[id] || m.MessageIDSnake != ids[id] || m.OrderingKey != r.key || m.Attributes["seq"] != fmt.Sprint(r.seq) ||
			m.Attributes["traceparent"] != testTraceparent || m.Attributes["tracestate"] != "noetl=1" {
			t.Errorf("%s: body message %+v", id, m)
		}
		if want := "projects/" + project + "/subscriptions/" + e.sub; r.body.Subscription != want {
			t.Errorf("%s: subscription %q, want %q", id, r.body.Subscription, want)
		}
		pt, err := time.Parse(time.RFC3339Nano, m.PublishTime)
		if err != nil || m.PublishTimeSnake != m.PublishTime || time.Since(pt) > time.Minute {
			t.Errorf("%s: publishTime %q publish_time %q (%v)", id, m.PublishTime, m.PublishTimeSnake, err)
		}
	}
	for _, k := range keys {
		if last[k] != n-1 {
			t.Errorf("key %s: last posted seq %d, want %d", k, last[k], n-1)
		}
	}
	if got := fmt.Sprint(attempts["exec-a/5"]); got != "[1 2 3]" {
		t.Errorf("exec-a/5 attempts %s, want [1 2 3]", got)
	}
	if got := fmt.Sprint(attempts["exec-b/12"]); got != "[1 2 3]" {
		t.Errorf("exec-b/12 attempts %s, want [1 2 3]", got)
	}
	if got := fmt.Sprint(attempts["exec-b/13"]); got != "[1]" {
		t.Errorf("exec-b/13 attempts %s, want [1]", got)
	}

	// The dead letter carries the message and the dead-letter attributes.
	var dead []*pubsub.Message
	var mu sync.Mutex
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	_ = c.Subscriber(e.deadSub).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		mu.Lock()
		dead = append(dead, m)
		mu.Unlock()
		rcancel()
	})
	rcancel()
	if len(dead) != 1 {
		t.Fatalf("dead letters: %d, want 1", len(dead))
	}
	d := dead[0]
	var p payload
	_ = json.Unmarshal(d.Data, &p)
	if p.Key != "exec-b" || p.Seq != 12 || d.OrderingKey != "exec-b" || d.Attributes["traceparent"] != testTraceparent ||
		d.Attributes[AttrDeadLetterDeliveryCount] != "3" || d.Attributes[AttrDeadLetterSubscription] != e.sub ||
		d.Attributes[AttrDeadLetterProject] != project || d.Attributes[AttrDeadLetterReason] == "" {
		t.Errorf("dead letter %s key %q attrs %v", d.Data, d.OrderingKey, d.Attributes)
	}
}

// runConcurrencyScenario checks that different ordering keys are delivered
// in parallel, at most Concurrency at a time.
func runConcurrencyScenario(t *testing.T, c *pubsub.Client, project string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newScenario(t, ctx, c, project)
	rcv, srv := newReceiver(t, nil)
	rcv.delay = 150 * time.Millisecond
	b, err := NewBridge(BridgeOptions{Client: c, Project: project, Subscription: e.sub, Topic: e.topic, Endpoint: srv.URL, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	bctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(bctx) }()
	defer func() { stop(); <-done }()
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	e.publish(t, ctx, keys, 1)
	for b.Stats().Delivered < int64(len(keys)) {
		if ctx.Err() != nil {
			t.Fatalf("timed out: %+v", b.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rcv.mu.Lock()
	maxIn := rcv.maxInFlight
	rcv.mu.Unlock()
	if maxIn < 2 || maxIn > 3 {
		t.Errorf("max concurrent POSTs = %d, want 2..3 (Concurrency 3)", maxIn)
	}
}
