// Package membus is the in-memory driver of the bus contract (shared/bus):
// Publisher publishes exactly the messages the Pub/Sub driver
// (shared/bus/pubsubbus) publishes and records them, for in-process tests
// of the engine (shared/control/controltest wires it). bustest holds it to
// the contract the Pub/Sub driver passes on the emulator.
package membus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// Publisher is an in-memory bus.Publisher: it publishes exactly the
// messages the Pub/Sub driver publishes (bus.BatchMessages and
// bus.CommandMessages: split batches, attributes, trace context,
// signature, the meter's pending counts, the publish counted on the
// context's meter), refuses what Pub/Sub refuses (a message over its size
// limit: InvalidArgument; a done context: Canceled or DeadlineExceeded),
// and records each message with the batch or command it decodes to
// (shared/jsonx), in order. bustest.Run holds it to the driver's contract.
type Publisher struct {
	// FailBatch, when set, is called before a batch is published; a
	// non-nil error fails the publish (nothing is recorded).
	FailBatch func(types.Batch) error
	// FailCommands, when set, is called before commands are published; a
	// non-nil error fails the publish (nothing is recorded).
	FailCommands func([]types.Command) error
	// Signer signs the messages as the driver's does (nil: unsigned).
	Signer *sign.Signer

	mu       sync.Mutex
	batches  []types.Batch
	commands []types.Command
	messages map[string][]bus.Encoded // topic ("events", "commands") → messages
	attempts int
}

// publishable refuses what the Pub/Sub client refuses: a done context,
// and a message that does not fit in one publish request.
func publishable(ctx context.Context, msgs []bus.Encoded) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "membus: publish")
	}
	for _, m := range msgs {
		if n := len(m.Data) + attributesSize(m.Attributes); n > bus.MaxPubSubMessageBytes-1024 {
			return errs.New(errs.InvalidArgument, "membus: publish: a %d-byte message exceeds Pub/Sub's limit (%d bytes per publish request)", n, bus.MaxPubSubMessageBytes)
		}
	}
	return nil
}

func attributesSize(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// PublishBatch implements bus.Publisher.
func (p *Publisher) PublishBatch(ctx context.Context, b types.Batch) error {
	p.mu.Lock()
	p.attempts++
	fail := p.FailBatch
	p.mu.Unlock()
	if fail != nil {
		if err := fail(b); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "membus: publish")
	}
	msgs, err := bus.BatchMessages(ctx, p.Signer, b)
	if err != nil {
		return err
	}
	if err := publishable(ctx, msgs); err != nil {
		return err
	}
	got := make([]types.Batch, len(msgs))
	for i, m := range msgs {
		if err := jsonx.Unmarshal(m.Data, &got[i]); err != nil {
			return fmt.Errorf("membus: decode batch: %w", err)
		}
	}
	bus.CountPublished(ctx, msgs)
	p.mu.Lock()
	p.batches = append(p.batches, got...)
	p.record(bus.EventsTopic, msgs)
	p.mu.Unlock()
	return recordEvents(got)
}

// recordMu serialises appends to the NOETL_RECORD_EVENTS file.
var recordMu sync.Mutex

// recordEvents appends the events of published batches, as the api would
// return them (one JSON object per line), to the file named by
// NOETL_RECORD_EVENTS when it is set: with the stack's recordings
// (emulators/e2e, NOETL_E2E_RECORD_EVENTS), the source of the typed
// payloads' round-trip test data (shared/history TestRecordedEvents
// -update), for the event shapes only unit tests reach (a reclaimed unit,
// an execution deadline, a cursor loop).
func recordEvents(batches []types.Batch) error {
	path := os.Getenv("NOETL_RECORD_EVENTS")
	if path == "" {
		return nil
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, b := range batches {
		for _, e := range b.Events {
			line, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if _, err := f.Write(append(line, '\n')); err != nil {
				return err
			}
		}
	}
	return nil
}

// record keeps msgs as published on topic. Called with p.mu held.
func (p *Publisher) record(topic string, msgs []bus.Encoded) {
	if p.messages == nil {
		p.messages = map[string][]bus.Encoded{}
	}
	p.messages[topic] = append(p.messages[topic], msgs...)
}

// PublishCommands implements bus.Publisher.
func (p *Publisher) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	if p.FailCommands != nil {
		if err := p.FailCommands(cmds); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "membus: publish")
	}
	msgs, err := bus.CommandMessages(ctx, p.Signer, cmds...)
	if err != nil {
		return err
	}
	if err := publishable(ctx, msgs); err != nil {
		return err
	}
	out := make([]types.Command, len(msgs))
	for i, m := range msgs {
		if err := jsonx.Unmarshal(m.Data, &out[i]); err != nil {
			return fmt.Errorf("membus: decode command: %w", err)
		}
	}
	bus.CountPublished(ctx, msgs)
	p.mu.Lock()
	p.commands = append(p.commands, out...)
	p.record(bus.CommandsTopic, msgs)
	p.mu.Unlock()
	return nil
}

// Messages returns the messages published on topic (bus.EventsTopic or
// bus.CommandsTopic), in publish order: what a subscription receives.
func (p *Publisher) Messages(topic string) []bus.Encoded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bus.Encoded(nil), p.messages[topic]...)
}

// Batches returns the published batches in publish order, as they arrive
// (repeats included: a republished batch appears again, with the same id;
// a batch over bus.MaxMessageBytes appears as its parts).
func (p *Publisher) Batches() []types.Batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]types.Batch(nil), p.batches...)
}

// BatchAttempts counts PublishBatch calls, failed ones included.
func (p *Publisher) BatchAttempts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// Commands returns the commands published on the commands topic, in order.
func (p *Publisher) Commands() []types.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]types.Command(nil), p.commands...)
}

// Events returns the execution's events as the projection keeps them: the
// first copy of each event id, in publish order ("" = every execution).
func (p *Publisher) Events(executionID string) []types.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	var out []types.Event
	for _, b := range p.batches {
		for _, e := range b.Events {
			if (executionID != "" && e.ExecutionID != executionID) || seen[e.EventID] {
				continue
			}
			seen[e.EventID] = true
			out = append(out, e)
		}
	}
	return out
}

// Log returns the execution's event log as the events projection reads it
// back (store.EventList): every copy of every batch projected, then put in
// causal order with duplicates dropped (types.EventsInOrder).
func (p *Publisher) Log(executionID string) []types.Event {
	p.mu.Lock()
	var ps []types.Projected
	seen := map[string]bool{}
	for _, b := range p.batches {
		if b.ExecutionID != executionID || seen[b.ID] {
			continue // the first copy of a batch wins
		}
		seen[b.ID] = true
		for i, e := range b.Events {
			ps = append(ps, types.Projected{Event: e, BatchID: b.ID, Index: i})
		}
	}
	p.mu.Unlock()
	return types.EventsInOrder(ps)
}

// EventsOf returns the distinct events of one type (see Events).
func (p *Publisher) EventsOf(executionID string, typ types.EventType) []types.Event {
	var out []types.Event
	for _, e := range p.Events(executionID) {
		if e.EventType == typ {
			out = append(out, e)
		}
	}
	return out
}

// Conflicts returns a description of every event id published with two
// different contents (type, clock, step, run, iteration or status): a
// re-published event must be the same event. Empty when consistent.
func (p *Publisher) Conflicts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := map[string]types.Event{}
	var out []string
	for _, b := range p.batches {
		for _, e := range b.Events {
			f, ok := first[e.EventID]
			if !ok {
				first[e.EventID] = e
				continue
			}
			if f.EventType != e.EventType || f.Clock != e.Clock || f.Step != e.Step || f.StepRun != e.StepRun ||
				iterOf(f.Iteration) != iterOf(e.Iteration) || f.Status != e.Status {
				out = append(out, fmt.Sprintf("event %s: %s clock %d, then %s clock %d (batch %s)", e.EventID, f.EventType, f.Clock, e.EventType, e.Clock, b.ID))
			}
		}
	}
	return out
}

func iterOf(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
