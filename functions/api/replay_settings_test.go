package api

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/wiring"
)

// TestReplaySubscriptionFromSettings: the api's rebuild reads the events
// topic through the subscription NOETL_REPLAY_SUBSCRIPTION names (of
// GOOGLE_CLOUD_PROJECT): against the in-process pstest server, a message
// published on a topic with two subscriptions is pulled through the named
// one, and the other keeps its copy.
func TestReplaySubscriptionFromSettings(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pubsub.NewClient(ctx, "p3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/p3/topics/ev"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"replay-x", "other"} {
		if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/p3/subscriptions/" + s, Topic: "projects/p3/topics/ev"}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Publish("projects/p3/topics/ev", []byte("batch-1"), nil)
	env := map[string]string{"NOETL_SIGNING_KEY": "api-test-key-0123456789abcdef0123456789ab", "GOOGLE_CLOUD_PROJECT": "p3", "NOETL_REPLAY_SUBSCRIPTION": "replay-x"}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	replayMu.Lock()
	replaySub = nil
	replayMu.Unlock()
	t.Cleanup(func() {
		replayMu.Lock()
		if replaySub != nil {
			_ = replaySub.Close()
		}
		replaySub = nil
		replayMu.Unlock()
	})
	s, err := replaySubscription(ctx, &wiring.Deps{Cfg: cfg})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Pull(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || string(msgs[0].Data) != "batch-1" {
		t.Fatalf("pulled %d messages through NOETL_REPLAY_SUBSCRIPTION: %+v", len(msgs), msgs)
	}
	if err := s.Ack(ctx, []string{msgs[0].AckID}); err != nil {
		t.Fatal(err)
	}
	// The same message is still waiting on the other subscription (the
	// pull went through the named one).
	res, err := c.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: "projects/p3/subscriptions/other", MaxMessages: 10})
	if err != nil || len(res.ReceivedMessages) != 1 {
		t.Fatalf("the other subscription: %v %v", res, err)
	}
}
