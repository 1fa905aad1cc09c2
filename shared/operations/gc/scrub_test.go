package gc_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

// published records the batches the scrub publishes.
type published struct {
	mu      sync.Mutex
	batches []types.Batch
}

func (p *published) PublishBatch(_ context.Context, b types.Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches = append(p.batches, b)
	return nil
}

func (p *published) lost() []history.ResultLost {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []history.ResultLost
	for _, b := range p.batches {
		for _, e := range b.Events {
			if e.EventType == types.EvResultLost {
				l, _ := history.Decode[history.ResultLost](e)
				out = append(out, l)
			}
		}
	}
	return out
}

// The scrub reads every result an execution's log references and finds
// the lost ones — replaced (another generation at the key), changed
// (a reference without its generation whose bytes differ), gone — once
// each, recording result.lost events in that execution's log; intact
// results, a repaired one among them, pass; an object no record names is
// listed apart.
func TestScrubFindsLostResults(t *testing.T) {
	ctx := context.Background()
	rs := &results.Store{Backend: results.NewMemory()}
	mem := memstore.NewMemory()
	const id = "300000000000000001"
	if err := mem.ExecutionCreate(ctx, &store.Execution{State: &engine.State{ExecutionID: id, Status: engine.ExecOK, Playbook: "p", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Source: "x"}); err != nil {
		t.Fatal(err)
	}
	refs := map[string]map[string]any{}
	for i, name := range []string{"intact", "replaced", "changed", "gone", "repaired"} {
		v, err := rs.OffloadForced(ctx, types.ResultCoords{ExecutionID: id, Step: name, Frame: 1, Attempt: 1}, map[string]any{"name": name, "pad": strings.Repeat("p", 50+i)})
		if err != nil {
			t.Fatal(err)
		}
		refs[name] = v.(map[string]any)
	}
	key := func(name string) string { return refs[name][results.RefKey].(map[string]any)["key"].(string) }
	// The log: step.done events holding the references (one of them
	// twice, and the changed one without its generation).
	var evs []types.Event
	for _, name := range []string{"intact", "replaced", "changed", "gone", "repaired", "intact"} {
		r := refs[name]
		if name == "changed" {
			inner := map[string]any{}
			for k, v := range r[results.RefKey].(map[string]any) {
				if k != results.GenerationKey {
					inner[k] = v
				}
			}
			r = map[string]any{results.RefKey: inner}
		}
		ev := types.NewEvent(types.EvStepDone, id, "execute", now, name)
		ev.Payload = history.Encode(history.StepDone{Result: map[string]any{"wrapped": r}})
		evs = append(evs, ev)
	}
	if _, err := mem.BatchPut(ctx, types.Batch{ID: "b1", ExecutionID: id, Source: "execute", Events: evs}); err != nil {
		t.Fatal(err)
	}
	// Damage.
	for _, name := range []string{"replaced", "changed"} {
		if err := rs.Put(ctx, key(name), []byte(`{"name":"forged"}`), results.ContentTypeJSON); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Delete(ctx, key("gone")); err != nil {
		t.Fatal(err)
	}
	data, _ := rs.Get(ctx, key("repaired"))
	w := rs.NewWriter(ctx, key("repaired"), results.ObjectAttrs{ContentType: results.ContentTypeJSON,
		Metadata: map[string]string{results.MetaRepairs: stringOf(refs["repaired"][results.RefKey].(map[string]any)[results.GenerationKey])}})
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// An execution with objects but no record.
	if _, err := rs.OffloadForced(ctx, types.ResultCoords{ExecutionID: "300000000000000002", Step: "s", Attempt: 1}, strings.Repeat("o", 100)); err != nil {
		t.Fatal(err)
	}

	pub := &published{}
	s := &gc.Scrubber{Results: rs, Logs: mem, Bus: pub, Source: "api", Now: func() time.Time { return now }}
	for _, scope := range []string{"", id} {
		pub.batches = nil
		rep, err := s.Run(ctx, scope)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Executions != 1 || rep.Results != 5 || rep.Intact != 2 || rep.Check != "crc32c" {
			t.Fatalf("scope %q: report %+v", scope, rep)
		}
		if scope == "" && (len(rep.NoRecord) != 1 || rep.NoRecord[0] != "300000000000000002") {
			t.Fatalf("no record: %v", rep.NoRecord)
		}
		got := map[string]string{}
		for _, l := range rep.Lost {
			got[l.Key] = l.Lost
		}
		want := map[string]string{key("replaced"): "replaced", key("changed"): "changed", key("gone"): "gone"}
		if len(got) != len(want) {
			t.Fatalf("lost %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("lost %v, want %v", got, want)
			}
		}
		events := pub.lost()
		if len(events) != 3 || len(pub.batches) != 1 || pub.batches[0].ExecutionID != id {
			t.Fatalf("result.lost events %+v in %d batches, want 3 in the execution's", events, len(pub.batches))
		}
		for _, e := range events {
			if want[e.Key] != e.Lost || e.URI == "" || e.Message == "" {
				t.Fatalf("result.lost %+v", e)
			}
		}
	}
}

func stringOf(v any) string { return strconv.FormatInt(v.(int64), 10) }
