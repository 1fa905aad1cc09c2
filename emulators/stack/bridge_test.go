package stack

import (
	"context"
	"io"
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

// A push request is the push body Pub/Sub sends, byte for byte in shape:
// snake_case and camelCase ids and times, no orderingKey without one.
func TestBridgePushRequest(t *testing.T) {
	b := &Bridge{opts: BridgeOptions{Project: "p", Subscription: "dispatch", Topic: "commands",
		Endpoint: PushEndpoint("http://127.0.0.1:1/dispatch/", "p", "commands")}}
	m := &pubsub.Message{ID: "42", Data: []byte("{}"), PublishTime: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC),
		Attributes: map[string]string{"traceparent": testTraceparent}}
	req, err := b.newRequest(context.Background(), m, 2)
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "http://127.0.0.1:1/dispatch/projects/p/topics/commands" {
		t.Errorf("URL %s", req.URL)
	}
	raw, _ := io.ReadAll(req.Body)
	if err := checkPush(req, raw); err != nil {
		t.Fatal(err)
	}
	want := `{"message":{"data":"e30=","attributes":{"traceparent":"` + testTraceparent + `"},"messageId":"42","message_id":"42",` +
		`"publishTime":"2026-01-02T03:04:05.006Z","publish_time":"2026-01-02T03:04:05.006Z"},"subscription":"projects/p/subscriptions/dispatch","deliveryAttempt":2}`
	if string(raw) != want {
		t.Errorf("body\n%s\nwant\n%s", raw, want)
	}
	if req.Header.Get("Traceparent") != "" {
		t.Error("the trace context travels in the attributes, not in headers")
	}
}

func TestNewBridgeValidates(t *testing.T) {
	if _, err := NewBridge(BridgeOptions{}); err == nil {
		t.Fatal("NewBridge accepted empty options")
	}
}
