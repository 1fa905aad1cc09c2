package types

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// proj returns a projected event id at clock in batch b, position i, with
// garbage Seq/PrevEventID that EventsInOrder must replace.
func proj(id string, clock int64, b string, i int) Projected {
	return Projected{Event: Event{EventID: id, Clock: clock, Seq: 42, PrevEventID: "stale", Payload: map[string]any{"batch": b}}, BatchID: b, Index: i}
}

func TestEventsInOrder(t *testing.T) {
	cases := []struct {
		name string
		in   []Projected
		want []string // event ids in order, with "@batch" when the kept copy matters
	}{
		{"empty", nil, []string{}},
		{"by clock", []Projected{proj("c", 3, "b1", 0), proj("a", 1, "b3", 0), proj("b", 2, "b2", 0)}, []string{"a", "b", "c"}},
		{"same clock: by batch id", []Projected{proj("y", 4, "u-b", 0), proj("x", 4, "u-a", 0)}, []string{"x", "y"}},
		{"same clock and batch: by position", []Projected{proj("q", 4, "b", 1), proj("p", 4, "b", 0)}, []string{"p", "q"}},
		{"concurrent units interleave by clock", []Projected{
			proj("b2", 5, "u-b", 1), proj("a3", 6, "u-a", 2), proj("s1", 1, "t1", 0), proj("a1", 4, "u-a", 0),
			proj("b1", 4, "u-b", 0), proj("a2", 5, "u-a", 1), proj("x1", 7, "t2", 0),
		}, []string{"s1", "a1", "b1", "a2", "b2", "a3", "x1"}},
		{"duplicate ids keep the first in causal order", []Projected{
			proj("r1", 4, "u-rerun", 0), proj("a1", 4, "u-a", 0), proj("r1", 4, "u-a", 1), proj("a1", 9, "late", 0),
		}, []string{"a1@u-a", "r1@u-a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for trial := range 5 { // the input order must not matter
				in := append([]Projected(nil), c.in...)
				r := rand.New(rand.NewPCG(uint64(trial), 7))
				r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
				got := EventsInOrder(in)
				if got == nil || len(got) != len(c.want) {
					t.Fatalf("EventsInOrder = %v, want %d events %v", got, len(c.want), c.want)
				}
				prev := ""
				for i, e := range got {
					id, batch, _ := strings.Cut(c.want[i], "@")
					if e.EventID != id || (batch != "" && e.Payload["batch"] != batch) {
						t.Fatalf("trial %d: event %d = %s (batch %v), want %s", trial, i, e.EventID, e.Payload["batch"], c.want[i])
					}
					if e.Seq != int64(i+1) || e.PrevEventID != prev {
						t.Fatalf("trial %d: event %d seq %d prev %q; want seq %d prev %q", trial, i, e.Seq, e.PrevEventID, i+1, prev)
					}
					prev = e.EventID
				}
			}
		})
	}
}

func TestStampClocks(t *testing.T) {
	evs := []Event{{EventID: "a", Clock: 99}, {EventID: "b"}, {EventID: "c", Clock: 1}}
	if last := StampClocks(evs, 5); last != 8 {
		t.Fatalf("StampClocks returned %d, want 8", last)
	}
	for i, want := range []int64{6, 7, 8} {
		if evs[i].Clock != want || evs[i].EventID != string(rune('a'+i)) {
			t.Fatalf("event %d = %+v, want clock %d", i, evs[i], want)
		}
	}
	if last := StampClocks(nil, 5); last != 5 {
		t.Fatalf("StampClocks(none, 5) = %d, want 5", last)
	}
	if MaxClock(evs) != 8 || MaxClock(nil) != 0 || MaxClock([]Event{{Clock: 3}, {Clock: 9}, {Clock: 4}}) != 9 {
		t.Fatal("MaxClock")
	}
}

func TestBatchBoundary(t *testing.T) {
	ev := func(id string, typ EventType) Event { return Event{EventID: id, EventType: typ} }
	cases := []struct {
		name   string
		events []Event
		want   string // "" = none
	}{
		{"none", []Event{ev("1", EvTaskDone), ev("2", EvLoopIterationDone)}, ""},
		{"empty", nil, ""},
		{"step.done", []Event{ev("1", EvTaskDone), ev("2", EvStepDone)}, "2"},
		{"step.failed not last", []Event{ev("1", EvStepFailed), ev("2", EvResultStored)}, "1"},
		{"the last of several", []Event{ev("1", EvLoopDone), ev("2", EvStepDone), ev("3", EvTaskDone)}, "2"},
	}
	for _, c := range cases {
		got, ok := Batch{Events: c.events}.Boundary()
		if ok != (c.want != "") || got.EventID != c.want {
			t.Errorf("%s: Boundary() = %q, %v; want %q", c.name, got.EventID, ok, c.want)
		}
	}
	boundary := map[EventType]bool{EvStepDone: true, EvStepFailed: true, EvLoopDone: true}
	for _, typ := range []EventType{EvExecutionRequested, EvPlaybookStarted, EvStepStarted, EvStepDone, EvStepFailed,
		EvTaskDone, EvTaskFailed, EvLoopStarted, EvLoopIterationDone, EvLoopIterationFailed, EvLoopDone, EvPlaybookFinished} {
		if typ.IsBoundary() != boundary[typ] {
			t.Errorf("%s.IsBoundary() = %v", typ, typ.IsBoundary())
		}
	}
}

// TestEventsInOrderKeepsFields: ordering touches only Seq and PrevEventID.
func TestEventsInOrderKeepsFields(t *testing.T) {
	e := Event{EventID: "x", EventType: EvTaskDone, Clock: 3, Step: "s", StepRun: 2, Iteration: IntPtr(1), Status: StatusOK,
		Payload: map[string]any{"n": int64(1)}, Seq: 9, PrevEventID: "p"}
	got := EventsInOrder([]Projected{{Event: e, BatchID: "b"}})
	e.Seq, e.PrevEventID = 1, ""
	if len(got) != 1 || !reflect.DeepEqual(got[0], e) {
		t.Fatalf("EventsInOrder = %+v, want %+v", got, e)
	}
}
