package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// batchOf returns a batch of n events with payloads of size bytes each,
// ending with a boundary event.
func batchOf(n, size int, route bool) types.Batch {
	b := types.Batch{ID: "batch-1", ExecutionID: "ex1", Source: "execute", Route: route}
	for i := range n {
		typ := types.EvTaskAttemptDone
		if i == n-1 {
			typ = types.EvStepDone
		}
		e := types.NewEvent(typ, "ex1", "execute", controltest.T0, types.DeriveIDPart(i))
		e.Clock = int64(i + 1)
		e.Payload = map[string]any{"blob": strings.Repeat("x", size)}
		b.Events = append(b.Events, e)
	}
	return b
}

func decode(t *testing.T, e bus.Encoded) types.Batch {
	t.Helper()
	var b types.Batch
	if err := json.Unmarshal(e.Data, &b); err != nil {
		t.Fatal(err)
	}
	if e.Attributes[bus.AttrBatchID] != b.ID || e.Attributes[bus.AttrExecutionID] != b.ExecutionID || e.ExecutionID != b.ExecutionID {
		t.Fatalf("attributes %v for batch %s", e.Attributes, b.ID)
	}
	if (e.Attributes[bus.AttrRoute] == "1") != b.Route {
		t.Fatalf("route attribute %q for a batch with route %v", e.Attributes[bus.AttrRoute], b.Route)
	}
	return b
}

func TestEncodeBatch(t *testing.T) {
	cases := []struct {
		name      string
		n, size   int
		route     bool
		wantParts int
	}{
		{"small: one message", 3, 100, true, 1},
		{"one event over the limit cannot be split", 1, bus.MaxMessageBytes + 10, true, 1},
		{"oversized: halves until each part fits", 8, 60 << 10, true, 4},
		{"oversized, not for route", 5, 90 << 10, false, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			encode := func() ([]bus.Encoded, *meter.Meter) {
				m := meter.New()
				m.Add("ex1", meter.FirestoreWrite, 3)
				m.Add("other", meter.FirestoreRead, 1)
				b := batchOf(c.n, c.size, c.route)
				b.Ops = map[string]float64{meter.FirestoreWrite: 1, meter.TasksCreate: 2}
				msgs, err := bus.EncodeBatch(m, testSigner, b, map[string]string{"traceparent": "00-abc-def-01"})
				if err != nil {
					t.Fatal(err)
				}
				return msgs, m
			}
			msgs, m := encode()
			if len(msgs) != c.wantParts {
				t.Fatalf("%d messages, want %d", len(msgs), c.wantParts)
			}
			for i, e := range msgs {
				// Every part carries the signature of its own bytes.
				if err := testSigner.Verify(sign.Batch, e.Data, e.Attributes[sign.Attribute]); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			var events []types.Event
			ops := map[string]float64{}
			ids := map[string]bool{}
			routed := 0
			for i, e := range msgs {
				if c.wantParts > 1 && len(e.Data) > bus.MaxMessageBytes {
					t.Fatalf("part %d is %d bytes", i, len(e.Data))
				}
				if e.Attributes["traceparent"] != "00-abc-def-01" {
					t.Fatalf("part %d lost the trace context: %v", i, e.Attributes)
				}
				b := decode(t, e)
				if ids[b.ID] {
					t.Fatalf("duplicate part id %s", b.ID)
				}
				ids[b.ID] = true
				if b.Route {
					routed++
					if _, ok := b.Boundary(); !ok {
						t.Fatalf("part %d is routed without a boundary event", i)
					}
				}
				events = append(events, b.Events...)
				for k, v := range b.Ops {
					ops[k] += v
				}
			}
			if c.route && routed != 1 || !c.route && routed != 0 {
				t.Fatalf("%d parts marked for route", routed)
			}
			orig := batchOf(c.n, c.size, c.route)
			if len(events) != len(orig.Events) {
				t.Fatalf("%d events after the split, want %d", len(events), len(orig.Events))
			}
			for i := range events {
				if events[i].EventID != orig.Events[i].EventID {
					t.Fatalf("event %d out of order after the split", i)
				}
			}
			if want := map[string]float64{meter.FirestoreWrite: 4, meter.TasksCreate: 2}; !reflect.DeepEqual(ops, want) {
				t.Fatalf("ops carried %v, want %v (the batch's plus the meter's pending, once)", ops, want)
			}
			if m.Drain("ex1") != nil {
				t.Fatal("the meter still holds the execution's ops")
			}
			if m.Drain("other") == nil {
				t.Fatal("another execution's ops were drained")
			}
			// Encoding again gives the same ids (a re-published batch dedups).
			again, _ := encode()
			for i := range msgs {
				if msgs[i].Attributes[bus.AttrBatchID] != again[i].Attributes[bus.AttrBatchID] {
					t.Fatalf("part %d id %s, then %s", i, msgs[i].Attributes[bus.AttrBatchID], again[i].Attributes[bus.AttrBatchID])
				}
			}
		})
	}
}

var testSigner, _ = sign.Parse("bus-test-signing-key-0123456789abcdef0123")

func TestEncodeCommand(t *testing.T) {
	c := types.Command{Kind: types.CmdRunStep, ExecutionID: "ex1", Step: "s", StepRun: 2, Attempt: 1}
	e, err := bus.EncodeCommand(testSigner, c, map[string]string{"traceparent": "tp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := testSigner.Verify(sign.Command, e.Data, e.Attributes[sign.Attribute]); err != nil {
		t.Fatalf("command not signed: %v", err)
	}
	var got types.Command
	if err := json.Unmarshal(e.Data, &got); err != nil || got.Step != "s" || got.StepRun != 2 {
		t.Fatalf("decoded %+v (%v)", got, err)
	}
	if e.Attributes[bus.AttrExecutionID] != "ex1" || e.Attributes[bus.AttrStep] != "s" || e.Attributes["traceparent"] != "tp" || e.ExecutionID != "ex1" {
		t.Fatalf("attributes %v", e.Attributes)
	}
}

func TestOpsBatch(t *testing.T) {
	b := bus.OpsBatch("ex1", map[string]float64{meter.FirestoreRead: 5, meter.PubSubPublish: 2})
	want := map[string]float64{meter.FirestoreRead: 5, meter.PubSubPublish: 3, meter.PubSubPublishBytes: meter.PubSubMinBytes}
	if !reflect.DeepEqual(b.Ops, want) {
		t.Fatalf("ops %v, want %v (its own publish counted)", b.Ops, want)
	}
	if b.ExecutionID != "ex1" || b.Events == nil || len(b.Events) != 0 || b.Route || !strings.HasPrefix(b.ID, "ops-") {
		t.Fatalf("ops batch %+v", b)
	}
	if raw, _ := json.Marshal(b); !strings.Contains(string(raw), `"events":[]`) {
		t.Fatalf("an ops batch encodes its events as %s; want an empty list", raw)
	}
	if other := bus.OpsBatch("ex1", nil); other.ID == b.ID {
		t.Fatal("two ops batches share an id (the second would be dropped as a duplicate)")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func opsOf(p *controltest.Publisher, id string) map[string]float64 {
	out := map[string]float64{}
	for _, b := range p.Batches() {
		if b.ExecutionID == id {
			for k, v := range b.Ops {
				out[k] += v
			}
		}
	}
	return out
}

func TestRunFlusher(t *testing.T) {
	t.Run("idle executions are flushed on the interval", func(t *testing.T) {
		m := meter.New()
		p := &controltest.Publisher{}
		m.Add("a", meter.FirestoreRead, 2)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { bus.RunFlusher(ctx, p, m, 5*time.Millisecond, 0, nil); close(done) }()
		waitFor(t, "the idle execution's ops", func() bool { return opsOf(p, "a")[meter.FirestoreRead] == 2 })
		m.Add("b", meter.TasksCreate, 1)
		waitFor(t, "a later execution's ops", func() bool { return opsOf(p, "b")[meter.TasksCreate] == 1 })
		cancel()
		<-done
		if got := opsOf(p, "a"); got[meter.FirestoreRead] != 2 || got[meter.PubSubPublish] != 1 {
			t.Fatalf("ops of a %v: each count once, plus the flush's own publish", got)
		}
	})
	t.Run("a flush's own publish is not flushed again", func(t *testing.T) {
		// The publishers (PubSub.PublishBatch, and the fake that publishes
		// the same messages) count each publish on the context's meter;
		// the flush must not feed itself.
		m := meter.New()
		p := &controltest.Publisher{}
		m.Add("a", meter.FirestoreRead, 1)
		ctx, cancel := context.WithCancel(meter.With(context.Background(), m))
		done := make(chan struct{})
		go func() { bus.RunFlusher(ctx, p, m, time.Millisecond, 0, nil); close(done) }()
		waitFor(t, "the idle execution's ops", func() bool { return opsOf(p, "a")[meter.FirestoreRead] == 1 })
		time.Sleep(50 * time.Millisecond) // fifty flush cycles
		cancel()
		<-done
		if n := len(p.Batches()); n != 1 {
			t.Fatalf("%d ops batches for one count: the flusher publishes its own publish counts again", n)
		}
		if got := opsOf(p, "a"); got[meter.PubSubPublish] != 1 {
			t.Fatalf("ops of a %v: the flush's publish counted once", got)
		}
	})
	t.Run("everything is flushed on stop", func(t *testing.T) {
		m := meter.New()
		p := &controltest.Publisher{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { bus.RunFlusher(ctx, p, m, time.Hour, time.Hour, nil); close(done) }()
		m.Add("a", meter.FirestoreRead, 1)
		m.Add("b", meter.FirestoreWrite, 4)
		time.Sleep(10 * time.Millisecond)
		if n := len(p.Batches()); n != 0 {
			t.Fatalf("%d batches published before the executions were idle", n)
		}
		cancel()
		<-done
		if opsOf(p, "a")[meter.FirestoreRead] != 1 || opsOf(p, "b")[meter.FirestoreWrite] != 4 {
			t.Fatalf("flush on stop: a %v, b %v", opsOf(p, "a"), opsOf(p, "b"))
		}
		if m.Drain("a") != nil || m.Drain("b") != nil {
			t.Fatal("counts left in the meter after the final flush")
		}
	})
	t.Run("a failed publish loses the counts instead of retrying forever", func(t *testing.T) {
		m := meter.New()
		p := &controltest.Publisher{FailBatch: func(types.Batch) error { return errors.New("down") }}
		m.Add("a", meter.FirestoreRead, 1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		bus.RunFlusher(ctx, p, m, time.Hour, time.Hour, nil)
		if p.BatchAttempts() != 1 || m.Drain("a") != nil {
			t.Fatalf("%d publish attempts; counts left: want 1 attempt and none left", p.BatchAttempts())
		}
	})
}
