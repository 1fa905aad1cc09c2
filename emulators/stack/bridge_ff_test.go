package stack

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/wiring"
)

// The bridge's push requests reach a CloudEvent function through
// functions-framework-go exactly as a push subscription's do in GCP: the
// framework converts the raw push body (the endpoint's path names the
// topic) into a messagePublished CloudEvent, and the engine's DecodePush
// reads the message back with its data, attributes, id and delivery
// attempt (the patched framework keeps it: the function fails the first
// two deliveries, and the third decodes as attempt 3, the last one
// wiring.LastDelivery sees for a policy of 3 attempts).
func TestBridgePushThroughFunctionsFramework(t *testing.T) {
	t.Setenv("FUNCTION_TARGET", "") // serve every registered function at its path
	got := make(chan event.Event, 4)
	var calls atomic.Int32
	if err := funcframework.RegisterCloudEventFunctionContext(context.Background(), "/fn/projects/",
		func(_ context.Context, e event.Event) error {
			if calls.Add(1) <= 2 {
				return errors.New("transient failure (test)")
			}
			got <- e
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	go func() { _ = funcframework.StartHostPort("127.0.0.1", strconv.Itoa(port)) }() // lives until the test binary ends
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("functions-framework server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	const project = "test-project"
	c := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic, sub := "events", "materialize"
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/" + project + "/topics/" + topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/" + project + "/subscriptions/" + sub,
		Topic: "projects/" + project + "/topics/" + topic, AckDeadlineSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	b, err := NewBridge(BridgeOptions{Client: c, Project: project, Subscription: sub, Topic: topic,
		Endpoint: PushEndpoint(base+"/fn", project, topic), MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	bctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = b.Run(bctx); close(done) }()
	defer func() { stop(); <-done }()

	p := c.Publisher(topic)
	defer p.Stop()
	id, err := p.Publish(ctx, &pubsub.Message{Data: []byte(`{"batch_id":"b1"}`), Attributes: map[string]string{"execution_id": "e1", "traceparent": testTraceparent}}).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var e event.Event
	select {
	case e = <-got:
	case <-ctx.Done():
		t.Fatalf("the function got no event; bridge stats %+v", b.Stats())
	}
	if e.Type() != MessagePublishedType || e.Source() != "//pubsub.googleapis.com/projects/"+project+"/topics/"+topic || e.ID() != id {
		t.Errorf("CloudEvent type %q source %q id %q; want %q, topic %s, id %s", e.Type(), e.Source(), e.ID(), MessagePublishedType, topic, id)
	}
	msg, err := wiring.DecodePush(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != `{"batch_id":"b1"}` || msg.MessageID != id || msg.Attributes["execution_id"] != "e1" || msg.Attributes["traceparent"] != testTraceparent {
		t.Errorf("decoded message %+v", msg)
	}
	if msg.DeliveryAttempt != 3 || !wiring.LastDelivery(msg, 3) || wiring.LastDelivery(msg, 4) {
		t.Errorf("decoded delivery attempt %d, want 3 (the third delivery)", msg.DeliveryAttempt)
	}
	if st := b.Stats(); st.Delivered != 1 || st.Failed != 2 {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && b.Stats().Delivered != 1; {
			time.Sleep(20 * time.Millisecond)
		}
		if st := b.Stats(); st.Delivered != 1 || st.Failed != 2 {
			t.Errorf("bridge stats %+v, want two failed attempts and one delivery", st)
		}
	}
}
