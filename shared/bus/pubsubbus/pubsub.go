// Package pubsubbus is the Google Cloud Pub/Sub driver of bus.Publisher
// (the contract in shared/bus, in the manner of go-cloud's gcppubsub beside
// pubsub/driver): it publishes the messages bus.BatchMessages and
// bus.CommandMessages make on the events and commands topics and waits for
// the server's acks; it never retries beyond the client's own policy.
package pubsubbus

import (
	"context"
	"errors"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// PubSub is the bus.Publisher on Google Cloud Pub/Sub (the emulator when
// PUBSUB_EMULATOR_HOST is set).
type PubSub struct {
	client   *pubsub.Client
	events   *pubsub.Publisher
	commands *pubsub.Publisher
	signer   *sign.Signer
	// co publishes concurrent event batches of one execution as one
	// message (bus.Coalescer).
	co *bus.Coalescer
}

// Open connects to Pub/Sub and returns the publisher of the two topics;
// every message it publishes is signed with signer (shared/sign; nil
// publishes unsigned messages, which the engine's consumers refuse).
func Open(ctx context.Context, project, eventsTopic, commandsTopic string, signer *sign.Signer) (*PubSub, error) {
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "bus: pubsub client")
	}
	mk := func(name string) *pubsub.Publisher {
		p := c.Publisher(name)
		// A message waits at most 200µs for others to share its request:
		// publishing is on the step's path (the WAL write before the
		// checkpoint), batching is a bonus.
		p.PublishSettings.DelayThreshold = 200 * time.Microsecond
		p.PublishSettings.CountThreshold = 100
		return p
	}
	p := &PubSub{client: c, events: mk(eventsTopic), commands: mk(commandsTopic), signer: signer}
	p.co = &bus.Coalescer{Publish: p.publishBatch}
	return p, nil
}

// Close flushes and stops the publishers.
func (p *PubSub) Close() error {
	p.events.Stop()
	p.commands.Stop()
	return p.client.Close()
}

// PublishBatch implements bus.Publisher: batches of one execution
// published while another of its publishes is in flight go out together,
// as one message (bus.Coalescer); each call returns once its events are
// acked.
func (p *PubSub) PublishBatch(ctx context.Context, b types.Batch) error {
	return p.co.PublishBatch(ctx, b)
}

// publishBatch publishes one batch (split when over bus.MaxMessageBytes).
func (p *PubSub) publishBatch(ctx context.Context, b types.Batch) error {
	msgs, err := bus.BatchMessages(ctx, p.signer, b)
	if err != nil {
		return err
	}
	return p.publish(ctx, p.events, msgs)
}

// PublishCommands implements bus.Publisher.
func (p *PubSub) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	msgs, err := bus.CommandMessages(ctx, p.signer, cmds...)
	if err != nil {
		return err
	}
	return p.publish(ctx, p.commands, msgs)
}

func (p *PubSub) publish(ctx context.Context, t *pubsub.Publisher, msgs []bus.Encoded) error {
	rs := make([]*pubsub.PublishResult, len(msgs))
	for i, e := range msgs {
		rs[i] = t.Publish(ctx, &pubsub.Message{Data: e.Data, Attributes: e.Attributes})
	}
	bus.CountPublished(ctx, msgs)
	var first error
	for _, r := range rs {
		if _, err := r.Get(ctx); err != nil && first == nil {
			first = publishError(err, "bus: publish")
		}
	}
	return first
}

// publishError wraps a publish error with its code: the client's own
// errors by what they mean (an oversized message can never be published:
// InvalidArgument; a flow-control limit: ResourceExhausted; a stopped
// publisher, an instance shutting down: Unavailable), any other by
// errs.CodeOf (the server's gRPC status, the context).
func publishError(err error, msg string) error {
	c := errs.CodeOf(err)
	switch {
	case errors.Is(err, pubsub.ErrOversizedMessage):
		c = errs.InvalidArgument
	case errors.Is(err, pubsub.ErrFlowControllerMaxOutstandingMessages), errors.Is(err, pubsub.ErrFlowControllerMaxOutstandingBytes):
		c = errs.ResourceExhausted
	case errors.Is(err, pubsub.ErrPublisherStopped):
		c = errs.Unavailable
	}
	return errs.Wrap(c, err, msg)
}

// Republish publishes a raw message on a topic (a DLQ replay of a message
// that was dead-lettered as it arrived) and waits for the ack.
func (p *PubSub) Republish(ctx context.Context, topic string, data []byte, attrs map[string]string) error {
	t := p.client.Publisher(topic)
	defer t.Stop()
	if _, err := t.Publish(ctx, &pubsub.Message{Data: data, Attributes: attrs}).Get(ctx); err != nil {
		return publishError(err, "bus: republish on "+topic)
	}
	return nil
}
