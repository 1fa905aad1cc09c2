package stack

import (
	"context"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"
)

// newFake starts the client library's in-process Pub/Sub fake.
func newFake(t *testing.T) *pubsub.Client {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := NewPubSubClient(context.Background(), "test-project", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestBridgeOrderingRetryDeadLetterFake(t *testing.T) {
	runBridgeScenario(t, newFake(t), "test-project")
}

func TestBridgeConcurrencyFake(t *testing.T) {
	runConcurrencyScenario(t, newFake(t), "test-project")
}

func TestBridgeBackoff(t *testing.T) {
	b := &Bridge{opts: BridgeOptions{MinBackoff: 200 * time.Millisecond, MaxBackoff: 10 * time.Second}}
	want := []time.Duration{200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for i, w := range want {
		if got := b.backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func TestBridgeRequestWithoutOrderingKey(t *testing.T) {
	b := &Bridge{opts: BridgeOptions{Project: "p", Subscription: "dispatch", Topic: "commands", Endpoint: "http://127.0.0.1:1/dispatch"}}
	m := &pubsub.Message{ID: "42", Data: []byte("{}"), PublishTime: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC),
		Attributes: map[string]string{"googclient_traceparent": testTraceparent}}
	req, err := b.newRequest(context.Background(), m, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{}
	want.Set("Ce-Subject", "subscriptions/dispatch")
	want.Set("Ce-Time", "2026-01-02T03:04:05.006Z")
	want.Set("Ce-Source", "//pubsub.googleapis.com/projects/p/topics/commands")
	want.Set("Traceparent", testTraceparent)
	for k := range want {
		if req.Header.Get(k) != want.Get(k) {
			t.Errorf("%s = %q, want %q", k, req.Header.Get(k), want.Get(k))
		}
	}
	if req.Header.Get("Tracestate") != "" {
		t.Errorf("unexpected tracestate %q", req.Header.Get("Tracestate"))
	}
}

func TestNewBridgeValidates(t *testing.T) {
	if _, err := NewBridge(BridgeOptions{}); err == nil {
		t.Fatal("NewBridge accepted empty options")
	}
}
