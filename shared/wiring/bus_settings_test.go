package wiring

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// TestBusFromSettings: the bus the functions build (DefaultBuilders,
// against the in-process pstest server) publishes event batches to
// NOETL_EVENTS_TOPIC and commands to NOETL_COMMANDS_TOPIC of
// GOOGLE_CLOUD_PROJECT: only those two topics exist, each receives its
// message.
func TestBusFromSettings(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	env := map[string]string{"GOOGLE_CLOUD_PROJECT": "p2", "NOETL_EVENTS_TOPIC": "ev-2", "NOETL_COMMANDS_TOPIC": "cmd-2"}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pubsub.NewClient(ctx, "p2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, n := range []string{"ev-2", "cmd-2"} {
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/p2/topics/" + n}); err != nil {
			t.Fatal(err)
		}
	}
	signer, err := sign.Parse("bus-settings-test-key-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	b, err := DefaultBuilders().Bus(ctx, cfg, signer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := types.NewEvent(types.EvStepDone, "1234567890123456789", "execute", now, "s", "1")
	if err := b.PublishBatch(ctx, types.Batch{ID: "b1", ExecutionID: "1234567890123456789", Source: "execute", Events: []types.Event{ev}}); err != nil {
		t.Fatalf("an event batch to NOETL_EVENTS_TOPIC: %v", err)
	}
	if err := b.PublishCommands(ctx, types.Command{Kind: types.CmdRunStep, ExecutionID: "1234567890123456789", Step: "s", StepRun: 1}); err != nil {
		t.Fatalf("a command to NOETL_COMMANDS_TOPIC: %v", err)
	}
	got := map[string]string{}
	for _, m := range srv.Messages() {
		got[m.Topic] = string(m.Data)
	}
	if n := len(srv.Messages()); n != 2 || !strings.Contains(got["projects/p2/topics/ev-2"], `"batch_id":"b1"`) || !strings.Contains(got["projects/p2/topics/cmd-2"], `"step":"s"`) {
		t.Errorf("%d messages published: %v; want the batch on ev-2, the command on cmd-2", n, got)
	}
}
