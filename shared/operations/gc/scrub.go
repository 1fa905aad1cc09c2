package gc

// The scrub (NoETL result storage RFC "Phase F" DR: find a lost or corrupt
// object before a reader does): every stored result an
// execution's event log references is read whole, exactly as a read
// opens it (its generation, or a repair of it), and checked against its
// reference's digest (results.Store.Verify). A result found lost — gone,
// replaced by another generation, or with other bytes — is reported and
// recorded in its execution's log as a result.lost event; `noetl results
// repair` may then re-derive it (repair.go). It runs from `noetl results
// verify [--execution ID]` and daily beside GC (terraform storage.tf,
// Cloud Scheduler job noetl-results-verify).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wire"
)

// Logs is what the scrub reads of the engine's state: execution records
// and their event logs (store.Store satisfies it).
type Logs interface {
	ExecutionGet(ctx context.Context, id string) (*store.Execution, error)
	EventList(ctx context.Context, executionID string) ([]types.Event, error)
}

// Publisher publishes the scrub's events (bus.Publisher satisfies it).
type Publisher interface {
	PublishBatch(ctx context.Context, b types.Batch) error
}

// Scrubber checks stored results against their references. Results and
// Logs are required; without Bus nothing is recorded in the logs (the
// report still lists every loss).
type Scrubber struct {
	Results *results.Store
	Logs    Logs
	Bus     Publisher
	// Check is the digest compared ("" is the tier's ReadCheck; a
	// repaired object is checked against its sha256 either way).
	Check results.ReadCheck
	// Source names the publisher of the scrub's events ("api").
	Source string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Log receives one line per lost result (nil: none).
	Log *slog.Logger
}

// LostResult is wire.LostResult (an entry of ScrubReport.Lost).
type LostResult = wire.LostResult

// ScrubReport is wire.ScrubReport (the api answers POST /results/verify with it).
type ScrubReport = wire.ScrubReport

func (s *Scrubber) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scrubber) check() results.ReadCheck {
	if s.Check != "" {
		return s.Check
	}
	if s.Results.ReadCheck != "" {
		return s.Results.ReadCheck
	}
	return results.ReadCheckCRC32C
}

// Run scrubs one execution (executionID) or, with "", every execution
// with results in any cell of the tier. A failure to read a record, a
// log or an object for a reason other than its loss stops the scrub
// (nothing is reported lost on a guess).
func (s *Scrubber) Run(ctx context.Context, executionID string) (ScrubReport, error) {
	rep := ScrubReport{Check: string(s.check())}
	if s.Results == nil || s.Logs == nil {
		return rep, errors.New("gc: scrub: Results and Logs are required")
	}
	ids := []string{executionID}
	if executionID == "" {
		var err error
		if ids, err = s.executions(ctx); err != nil {
			return rep, err
		}
	}
	for _, id := range ids {
		if err := s.execution(ctx, id, &rep); err != nil {
			return rep, fmt.Errorf("gc: scrub execution %s: %w", id, err)
		}
	}
	return rep, nil
}

// executions lists the executions that have result objects in any cell,
// sorted.
func (s *Scrubber) executions(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for cell, b := range s.Results.Backends() {
		err := b.List(ctx, s.Results.RootPrefix(), func(o results.ObjectInfo) error {
			if id, ok := results.KeyExecution(o.Key); ok {
				seen[id] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("gc: scrub: list cell %s: %w", cell, err)
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// execution checks every result one execution's log references.
func (s *Scrubber) execution(ctx context.Context, id string, rep *ScrubReport) error {
	rec, err := s.Logs.ExecutionGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		rep.NoRecord = append(rep.NoRecord, id)
		return nil
	}
	if err != nil {
		return err
	}
	evs, err := s.Logs.EventList(ctx, id)
	if err != nil {
		return err
	}
	rep.Executions++
	var lost []types.Event
	for _, r := range References(evs) {
		rep.Results++
		pr, err := s.Results.ParseRef(r)
		if err != nil {
			continue // not a reference of this tier (a malformed hand-made one): nothing to read
		}
		if pr.SHA256 == "" && pr.CRC32C == "" && pr.Generation == 0 {
			rep.Unchecked++
			continue
		}
		v, err := s.Results.Verify(ctx, r, s.check())
		rep.Bytes += v.Bytes
		kind := results.LostKind(err)
		switch {
		case err == nil:
			rep.Intact++
			continue
		case kind == "":
			return err
		}
		l := LostResult{ExecutionID: id, URI: pr.URI, Key: pr.Key, Generation: pr.Generation, Lost: kind, Message: err.Error()}
		rep.Lost = append(rep.Lost, l)
		if s.Log != nil {
			s.Log.WarnContext(ctx, "results scrub: result lost", "execution_id", id, "uri", l.URI, "key", l.Key, "lost", kind, "error", l.Message)
		}
		lost = append(lost, s.lostEvent(rec.State.Clock, l))
	}
	if len(lost) == 0 || s.Bus == nil {
		return nil
	}
	b := types.Batch{ID: types.DeriveID(id, "scrub", lost[0].EventID, fmt.Sprint(len(lost))), ExecutionID: id, Source: s.Source, Events: lost}
	return s.Bus.PublishBatch(ctx, b)
}

// lostEvent is the result.lost event of l, stamped after the execution's
// last event. Its id names the object and how it was found lost, so a
// repeated scrub records a loss once.
func (s *Scrubber) lostEvent(clock int64, l LostResult) types.Event {
	now := s.now()
	ev := types.NewEvent(types.EvResultLost, l.ExecutionID, s.Source, now, "result.lost", l.Key, fmt.Sprint(l.Generation), l.Lost)
	ev.Clock = types.HLC(clock, now) + 1
	ev.EntityType, ev.EntityID = "result", l.URI
	ev.Status = types.StatusError
	ev.Payload = history.Encode(history.ResultLost{URI: l.URI, Key: l.Key, Generation: l.Generation, Lost: l.Lost, Message: l.Message})
	return ev
}

// References returns the distinct result references (their "$ref" maps,
// whole) an event log holds, in the order first met: in any payload, at
// any depth (a step's result, an iteration's, a loop's, result.stored).
// References to the same object (key and generation) count once.
func References(evs []types.Event) []map[string]any {
	var out []map[string]any
	seen := map[string]bool{}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if results.IsRef(x) {
				inner, _ := x[results.RefKey].(map[string]any)
				k := fmt.Sprint(inner["key"], "#", inner[results.GenerationKey], "#", inner["uri"])
				if inner != nil && !seen[k] {
					seen[k] = true
					out = append(out, map[string]any{results.RefKey: inner})
				}
				return
			}
			for _, e := range x {
				walk(e, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	for _, e := range evs {
		walk(e.Payload, 0)
	}
	return out
}
