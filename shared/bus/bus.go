// Package bus publishes the event log and the command stream on Pub/Sub
// (ARCHITECTURE.md "The control loop"): events on the "events" topic and
// commands on the "commands" topic, both with ordering key = execution id,
// so that route sees an execution's events in the order they were
// published. The W3C trace context of the publisher rides in the message
// attributes. Publishing waits for the server's ack (the durability
// boundary, seed 004 T1) and never retries beyond the client's own policy.
package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Publisher publishes events and commands.
type Publisher struct {
	client   *pubsub.Client
	events   *pubsub.Publisher
	commands *pubsub.Publisher
}

// Open connects to Pub/Sub (the emulator when PUBSUB_EMULATOR_HOST is set).
func Open(ctx context.Context, project, eventsTopic, commandsTopic string) (*Publisher, error) {
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("bus: pubsub client: %w", err)
	}
	mk := func(name string) *pubsub.Publisher {
		p := c.Publisher(name)
		p.EnableMessageOrdering = true
		p.PublishSettings.DelayThreshold = 2 * time.Millisecond
		p.PublishSettings.CountThreshold = 200
		return p
	}
	return &Publisher{client: c, events: mk(eventsTopic), commands: mk(commandsTopic)}, nil
}

// Close flushes and stops the publishers.
func (p *Publisher) Close() error {
	p.events.Stop()
	p.commands.Stop()
	return p.client.Close()
}

// PublishEvents publishes evs in order and waits for every ack.
func (p *Publisher) PublishEvents(ctx context.Context, evs ...types.Event) error {
	rs := make([]*pubsub.PublishResult, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("bus: encode event %s: %w", ev.EventType, err)
		}
		attrs := map[string]string{"event_type": ev.EventType, "execution_id": ev.ExecutionID, "event_id": ev.EventID}
		telemetry.Inject(ctx, attrs)
		rs = append(rs, p.events.Publish(ctx, &pubsub.Message{Data: b, Attributes: attrs, OrderingKey: ev.ExecutionID}))
	}
	return wait(ctx, p.events, rs, evs, func(e types.Event) string { return e.ExecutionID })
}

// PublishCommands publishes cmds in order and waits for every ack.
func (p *Publisher) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	rs := make([]*pubsub.PublishResult, 0, len(cmds))
	for _, c := range cmds {
		if c.TraceParent == "" {
			c.TraceParent = telemetry.TraceParent(ctx)
		}
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("bus: encode command: %w", err)
		}
		attrs := map[string]string{"execution_id": c.ExecutionID, "step": c.Step, "command_id": c.ID}
		telemetry.Inject(ctx, attrs)
		rs = append(rs, p.commands.Publish(ctx, &pubsub.Message{Data: b, Attributes: attrs, OrderingKey: c.ExecutionID}))
	}
	return wait(ctx, p.commands, rs, cmds, func(c types.Command) string { return c.ExecutionID })
}

func wait[T any](ctx context.Context, t *pubsub.Publisher, rs []*pubsub.PublishResult, items []T, key func(T) string) error {
	var first error
	for i, r := range rs {
		if _, err := r.Get(ctx); err != nil {
			// An ordered key pauses after a failure; resume it so the
			// redelivered handler can publish again.
			t.ResumePublish(key(items[i]))
			if first == nil {
				first = fmt.Errorf("bus: publish: %w", err)
			}
		}
	}
	return first
}
