// Package bus is the contract of the engine's message bus (README
// "Architecture" "The control loop"): Publisher, and the messages every
// driver and fake publishes — event batches on the "events" topic (one
// message per unit of work or transition, types.Batch) and commands on the
// "commands" topic (bulk fan-out, timers, replays; dispatch turns each into
// a Cloud Task). Nothing relies on message order, so no ordering keys are
// used. The W3C trace context of the publisher rides in the message
// attributes. Publishing waits for the server's ack (the durability
// boundary, NoETL result storage RFC T1); drivers never retry beyond their
// client's own policy (google/go-cloud: drivers never retry). It links no
// cloud client: the Pub/Sub driver is shared/bus/pubsubbus, the in-memory
// fake controltest.Publisher, and both run shared/bus/bustest.
package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Publisher is what the functions need from the bus.
type Publisher interface {
	// PublishBatch publishes one event batch (split into several messages
	// when it is larger than MaxMessageBytes) and waits for the acks.
	PublishBatch(ctx context.Context, b types.Batch) error
	// PublishCommands publishes commands for dispatch, one message each.
	PublishCommands(ctx context.Context, cmds ...types.Command) error
}

// The bus's two topics by role (their deployed names are configuration:
// NOETL_EVENTS_TOPIC, NOETL_COMMANDS_TOPIC).
const (
	EventsTopic   = "events"
	CommandsTopic = "commands"
)

// Message attributes.
const (
	AttrExecutionID = "execution_id"
	AttrBatchID     = "batch_id"
	// AttrRoute marks a batch route must apply (value "1"); the route
	// subscription filters on it (attributes.route = "1").
	AttrRoute = "route"
	AttrStep  = "step"
)

// MaxMessageBytes bounds one event-batch message (a batch document must
// stay well under Firestore's 1 MiB limit; this keeps it under 256 KiB).
const MaxMessageBytes = 200 << 10

// Encoded is one message ready to publish.
type Encoded struct {
	Data       []byte
	Attributes map[string]string
	// ExecutionID is the execution the message belongs to (for metering).
	ExecutionID string
}

// EncodeBatch drains the meter's pending operations of the batch's
// execution into it and encodes it as one or more messages (split by
// events when over MaxMessageBytes; split ids are derived from the batch
// id, so re-publishing gives the same ids). Each message carries the
// signature of its data (purpose sign.Batch) in the attribute
// sign.Attribute; a nil signer adds none (consumers then refuse the
// message).
func EncodeBatch(m *meter.Meter, s *sign.Signer, b types.Batch, traceAttrs map[string]string) ([]Encoded, error) {
	b.Ops = meter.Merge(b.Ops, m.Drain(b.ExecutionID))
	data, err := json.Marshal(b)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "bus: encode batch "+b.ID)
	}
	if len(data) <= MaxMessageBytes || len(b.Events) <= 1 {
		return []Encoded{encoded(s, b, data, traceAttrs)}, nil
	}
	// Split in halves until every part fits.
	half := len(b.Events) / 2
	first, second := b, b
	first.Events, second.Events = b.Events[:half], b.Events[half:]
	first.ID, second.ID = types.DeriveID(b.ID, "a"), types.DeriveID(b.ID, "b")
	second.Ops = nil
	if _, ok := second.Boundary(); !ok {
		second.Route = false
	}
	if _, ok := first.Boundary(); !ok {
		first.Route = false
	}
	a, err := EncodeBatch(m, s, first, traceAttrs)
	if err != nil {
		return nil, err
	}
	c, err := EncodeBatch(m, s, second, traceAttrs)
	if err != nil {
		return nil, err
	}
	return append(a, c...), nil
}

func encoded(s *sign.Signer, b types.Batch, data []byte, traceAttrs map[string]string) Encoded {
	attrs := map[string]string{}
	for k, v := range traceAttrs {
		attrs[k] = v
	}
	attrs[AttrExecutionID], attrs[AttrBatchID] = b.ExecutionID, b.ID
	if b.Route {
		attrs[AttrRoute] = "1"
	}
	if sig := s.Sign(sign.Batch, data); sig != "" {
		attrs[sign.Attribute] = sig
	}
	return Encoded{Data: data, Attributes: attrs, ExecutionID: b.ExecutionID}
}

// EncodeCommand encodes one command message, signed like a Cloud Task
// body (purpose sign.Command, attribute sign.Attribute; a nil signer adds
// no signature).
func EncodeCommand(s *sign.Signer, c types.Command, traceAttrs map[string]string) (Encoded, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return Encoded{}, errs.Wrap(errs.InvalidArgument, err, "bus: encode command")
	}
	attrs := map[string]string{}
	for k, v := range traceAttrs {
		attrs[k] = v
	}
	attrs[AttrExecutionID], attrs[AttrStep] = c.ExecutionID, c.Step
	if sig := s.Sign(sign.Command, b); sig != "" {
		attrs[sign.Attribute] = sig
	}
	return Encoded{Data: b, Attributes: attrs, ExecutionID: c.ExecutionID}, nil
}

// MaxPubSubMessageBytes is Pub/Sub's limit on one publish request
// (pubsub.MaxPublishRequestBytes, 10 MB): the client refuses a message
// (data and attributes) that leaves no room in one for the request's topic
// name, with pubsub.ErrOversizedMessage (code InvalidArgument: it can never
// be published). MaxMessageBytes keeps event batches far below it; a
// single event larger than that is published whole and may hit it.
const MaxPubSubMessageBytes = 10_000_000

// TraceAttributes returns the message attributes that carry ctx's W3C
// trace context (traceparent, tracestate; empty without one).
func TraceAttributes(ctx context.Context) map[string]string {
	m := map[string]string{}
	telemetry.Inject(ctx, m)
	return m
}

// BatchMessages returns the messages PublishBatch publishes for b on the
// events topic: EncodeBatch with ctx's meter (meter.From) and trace
// context. The Pub/Sub driver and controltest.Publisher both publish
// exactly these, so the fake differs from the driver only in transport.
func BatchMessages(ctx context.Context, s *sign.Signer, b types.Batch) ([]Encoded, error) {
	return EncodeBatch(meter.From(ctx), s, b, TraceAttributes(ctx))
}

// CommandMessages returns the messages PublishCommands publishes on the
// commands topic, one per command in order: each command continues ctx's
// trace (its TraceParent is set from ctx when empty) and is encoded with
// EncodeCommand.
func CommandMessages(ctx context.Context, s *sign.Signer, cmds ...types.Command) ([]Encoded, error) {
	ta := TraceAttributes(ctx)
	msgs := make([]Encoded, 0, len(cmds))
	for _, c := range cmds {
		if c.TraceParent == "" {
			c.TraceParent = telemetry.TraceParent(ctx)
		}
		e, err := EncodeCommand(s, c, ta)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, e)
	}
	return msgs, nil
}

// CountPublished counts the publishes of msgs on ctx's meter: one
// operation and the billable bytes per message, on the execution each
// belongs to.
func CountPublished(ctx context.Context, msgs []Encoded) {
	m := meter.From(ctx)
	for _, e := range msgs {
		m.Add(e.ExecutionID, meter.PubSubPublish, 1)
		m.Add(e.ExecutionID, meter.PubSubPublishBytes, meter.Billable(len(e.Data)))
	}
}

// OpsBatch returns a batch that carries only an execution's pending
// operation counts (published by the flusher). It counts its own publish
// (an ops-only message is under Pub/Sub's 1,000-byte billing minimum).
func OpsBatch(executionID string, ops map[string]float64) types.Batch {
	var r [8]byte
	_, _ = rand.Read(r[:])
	ops = meter.Merge(ops, map[string]float64{meter.PubSubPublish: 1, meter.PubSubPublishBytes: meter.PubSubMinBytes})
	return types.Batch{ID: "ops-" + hex.EncodeToString(r[:]), ExecutionID: executionID, Source: "meter", Events: []types.Event{}, Ops: ops}
}

// RunFlusher publishes, every interval until ctx ends, the pending
// operation counts of executions idle for at least idle (so the tail of an
// execution's counts reaches the projection), and flushes everything when
// ctx ends.
func RunFlusher(ctx context.Context, p Publisher, m *meter.Meter, interval, idle time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	flush := func(age time.Duration) {
		for _, id := range m.Idle(age) {
			ops := m.Drain(id)
			if len(ops) == 0 {
				continue
			}
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			// OpsBatch counts its own publish. The publisher counts every
			// publish again on the context's meter: on m, that count would
			// be pending once more, flushed as another ops batch a second
			// later, and so on for ever (every execution the instance ever
			// metered publishing one message per cycle). Its count goes to
			// a throw-away meter instead.
			pctx = meter.With(pctx, meter.New())
			if err := p.PublishBatch(pctx, OpsBatch(id, ops)); err != nil && log != nil {
				log.Warn("bus: publishing operation counts failed; they are lost for this execution", "execution_id", id, "error", err.Error())
			}
			cancel()
		}
	}
	for {
		select {
		case <-ctx.Done():
			flush(0)
			return
		case <-t.C:
			flush(idle)
		}
	}
}
