package control

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// DLQ parks (README "The soak"). A unit filed in the DLQ is parked: the filing and
// the park are one commit, and the park is where the unit's completion
// looks, so that whichever of the two comes last sees the other — a
// completed unit is never left as a pending DLQ entry, and a filed unit
// runs again only through its entry's replay:
//
//   - a loop iteration parks on its iteration record (store.IterationPark:
//     the record held by the entry, without expiry); a delivery that ran
//     before the park and ends the iteration resolves the entry in the
//     same commit (store.IterationEnd); any other delivery is dropped
//     (store.ErrParked) but the replay (types.Command.ReplayOf);
//   - a step unit parks in the execution document (engine.State.Parked,
//     written with the entry in one checkpoint); the transition that ends
//     its step run — its completion through another delivery, its replay,
//     its discard, a timeout, a cancellation — resolves the entry in the
//     same commit (resolveParks).
//
// Filing is refused when the unit has already ended (its iteration record,
// step run or execution), or when another delivery holds an unexpired
// lease on it (that delivery runs the unit, and its watchdog finishes or
// files it if it dies).

// FileParams names a unit to file in the DLQ.
type FileParams struct {
	// Unit is the unit as dispatched (the entry replays it).
	Unit types.Command
	// Holder is the filer's own lease holder ("" when it holds none): its
	// lease is taken over by the park.
	Holder string
	// Entry is the DLQ entry (MessageID set; status is set to pending).
	Entry store.DLQEntry
}

// FileOutcome is what FileUnit did: Filed reports the unit filed and
// parked; otherwise Reason says why nothing was filed, and Ended reports
// that the unit had ended (its iteration record, step run or execution):
// what failed was its follow-up (the loop's next step, the transition's
// outbox), which a later delivery of the unit carries out.
type FileOutcome struct {
	Filed  bool
	Ended  bool
	Reason string
}

// FileUnit files a unit in the DLQ and parks it (see above). Errors are
// store errors (retry).
func (c *Control) FileUnit(ctx context.Context, p FileParams) (FileOutcome, error) {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return FileOutcome{}, err
	}
	cmd, e := p.Unit, p.Entry
	e.MessageID = store.DLQID(e.MessageID)
	e.Status = store.DLQPending
	e.Note = ""
	// An entry parks its unit once: an entry already resolved (replayed,
	// discarded, done) is not filed again.
	switch old, err := c.Store.DLQGet(ctx, e.MessageID); {
	case err == nil && old.Status != store.DLQPending:
		return FileOutcome{Reason: "its entry " + e.MessageID + " is already " + string(old.Status)}, nil
	case err == nil:
		e.FirstSeen, e.Attempts = old.FirstSeen, max(e.Attempts, old.Attempts)
	case !errors.Is(err, store.ErrNotFound):
		return FileOutcome{}, err
	}
	rec, err := c.Store.ExecutionGet(ctx, cmd.ExecutionID)
	if errors.Is(err, store.ErrNotFound) {
		return FileOutcome{Reason: "its execution does not exist"}, nil
	}
	if err != nil {
		return FileOutcome{}, err
	}
	if why := unitEnded(rec.State, cmd); why != "" {
		return FileOutcome{Ended: true, Reason: why}, nil
	}
	if cmd.Iteration != nil {
		key := engine.LoopKey(cmd.Step, cmd.StepRun)
		// A batched loop's ends may be in group record documents (batch.go):
		// an iteration ended there is not filed.
		plan, err := c.Plan(ctx, cmd.ExecutionID, key)
		if err != nil {
			return FileOutcome{}, err
		}
		ended, err := c.Store.IterationPark(ctx, store.IterationParkParams{ExecutionID: cmd.ExecutionID,
			LoopKey: key, Index: *cmd.Iteration, Holder: p.Holder, Entry: e, Now: c.now(), Grouped: plan.BatchOf() > 1})
		switch {
		case errors.Is(err, store.ErrLeaseHeld):
			return FileOutcome{Reason: "another delivery holds its lease"}, nil
		case errors.Is(err, store.ErrParked):
			return FileOutcome{Reason: "it is parked under another DLQ entry"}, nil
		case err != nil:
			return FileOutcome{}, err
		case ended != nil:
			return FileOutcome{Ended: true, Reason: fmt.Sprintf("the iteration already ended (%s)", ended.Status)}, nil
		}
		return FileOutcome{Filed: true}, nil
	}
	key := cmd.UnitKey()
	holder, expires, err := c.Store.LeaseGet(ctx, cmd.ExecutionID, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return FileOutcome{}, err
	}
	if err == nil && holder != p.Holder && expires.After(c.now()) {
		return FileOutcome{Reason: "another delivery holds its lease"}, nil
	}
	out := FileOutcome{Filed: true}
	_, err = c.Store.ExecutionCheckpoint(ctx, store.CheckpointParams{ExecutionID: cmd.ExecutionID, Base: rec,
		Apply: func(rec *store.Execution) (*engine.Output, error) {
			rec.File, rec.Resolve = nil, nil
			out = FileOutcome{Filed: true}
			st := rec.State
			if why := unitEnded(st, cmd); why != "" {
				out = FileOutcome{Ended: true, Reason: why}
				return nil, nil
			}
			if pk, ok := st.Parked[key]; ok {
				switch {
				case pk.DLQID == e.MessageID:
					return nil, nil // filed already
				case pk.DLQID == cmd.ReplayOf:
					// The replay of the entry that parks it failed in
					// turn: that entry was replayed, this one parks it.
					rec.Resolve = []store.DLQResolution{{ID: pk.DLQID, Status: store.DLQReplayed}}
				default:
					out = FileOutcome{Reason: "it is parked under another DLQ entry"}
					return nil, nil
				}
			}
			if st.Parked == nil {
				st.Parked = map[string]engine.Park{}
			}
			st.Parked[key] = engine.Park{DLQID: e.MessageID, Step: cmd.Step, Run: cmd.StepRun}
			rec.File = &e
			return &engine.Output{}, nil
		}})
	if err != nil {
		// The execution document cannot be written (the failures that
		// exhausted the unit may be this very outage): the entry is filed
		// without its park rather than lost — the DLQ operations still
		// find a unit that ended meanwhile (UnitEnded).
		c.log().Warn("filing a unit in the DLQ without parking it: the execution document cannot be written", "execution_id", cmd.ExecutionID, "step", cmd.Step, "dlq_id", e.MessageID, "error", err.Error())
		if perr := c.Store.DLQPut(ctx, e); perr != nil {
			return FileOutcome{}, perr
		}
		return FileOutcome{Filed: true, Reason: "filed without a park: " + err.Error()}, nil
	}
	return out, nil
}

// unitEnded says why a unit of st can no longer run ("" while its
// execution and step run go on).
func unitEnded(st *engine.State, cmd types.Command) string {
	if st.Terminal() {
		return fmt.Sprintf("its execution ended (%s)", st.Status)
	}
	ss := st.Steps[cmd.Step]
	if ss == nil || ss.Run != cmd.StepRun || (ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled) {
		return fmt.Sprintf("its step run %s#%d ended", cmd.Step, cmd.StepRun)
	}
	return ""
}

// UnitEnded reports why a unit can no longer run ("" while it can): its
// execution or step run ended, or, for a loop iteration, its record ended
// (completed or canceled). The DLQ operations call it before replaying a
// unit.
func (c *Control) UnitEnded(ctx context.Context, cmd types.Command) (why string, err error) {
	rec, err := c.Store.ExecutionGet(ctx, cmd.ExecutionID)
	if errors.Is(err, store.ErrNotFound) {
		return "its execution does not exist", nil
	}
	if err != nil {
		return "", err
	}
	if cmd.Iteration != nil {
		status, _, _, err := c.Store.IterationGet(ctx, cmd.ExecutionID, engine.LoopKey(cmd.Step, cmd.StepRun), *cmd.Iteration)
		switch {
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return "", err
		case err == nil && status != types.StatusRunning:
			return fmt.Sprintf("the iteration already ended (%s)", status), nil
		}
	}
	return unitEnded(rec.State, cmd), nil
}

// IterationCanceledEvent is the loop.iteration.canceled of an iteration
// cut short because its step run or execution ended without it (README "The soak"
// item 3). Its id derives from the iteration alone, so that whoever
// records it — the unit that stops at a task boundary, a later delivery
// of it that is dropped, the stop of its execution — records one event.
// The caller stamps its clock.
func IterationCanceledEvent(executionID, step string, run, index int, source, reason string, now time.Time) types.Event {
	ev := types.NewEvent(types.EvLoopIterationCanceled, executionID, source, now, step, types.DeriveIDPart(run), types.DeriveIDPart(index), "canceled")
	ev.Step, ev.StepRun, ev.Iteration = step, run, types.IntPtr(index)
	ev.EntityType, ev.EntityID = "iteration", step+"#"+types.DeriveIDPart(index)
	ev.Status = types.StatusCanceled
	ev.Payload = history.Encode(history.IterationCanceled{Index: index, Reason: reason})
	return ev
}

// CancelIteration ends a loop iteration cut short (its step run or
// execution ended without it) with a canceled record (clock: its
// loop.iteration.canceled's) unless it ended already, and returns the
// event to publish — nil when there is none to publish: the record ended
// another way, or another holder still holds it (it cancels it at its next
// task boundary; its watchdog covers it if it dies). holder is the
// caller's lease ("" when it holds none). A record canceled earlier gives
// its event again (same id and clock: a crash between the record and the
// event is repaired by whoever finds it). A parked iteration's DLQ entry
// is resolved done in the same commit.
func (c *Control) CancelIteration(ctx context.Context, cmd types.Command, holder, reason string, clock int64) (*types.Event, error) {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return nil, err
	}
	key := engine.LoopKey(cmd.Step, cmd.StepRun)
	rec := engine.IterationRecord{Index: *cmd.Iteration, Status: types.StatusCanceled, Clock: clock,
		Error: map[string]any{"kind": string(types.ErrKindCanceled), "message": reason}}
	first, err := c.Store.IterationEnd(ctx, store.IterationEndParams{ExecutionID: cmd.ExecutionID, LoopKey: key, Record: rec, Holder: holder, Now: c.now(),
		Resolve: func(id string) store.DLQResolution {
			return store.DLQResolution{Status: store.DLQDone, Note: "the unit's step run ended without it (" + reason + ")"}
		}})
	if errors.Is(err, store.ErrLeaseLost) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !first {
		// Ended already: canceled before (give its event again), or
		// completed, or leased by a live holder.
		leases, err := c.Store.IterationRunning(ctx, cmd.ExecutionID, key)
		if err != nil {
			return nil, err
		}
		for _, l := range leases {
			if l.Index == *cmd.Iteration && l.Status == types.StatusCanceled {
				clock = l.Clock
				first = true
			}
		}
		if !first {
			return nil, nil
		}
	}
	ev := IterationCanceledEvent(cmd.ExecutionID, cmd.Step, cmd.StepRun, *cmd.Iteration, c.Source, reason, c.now())
	ev.Clock = clock
	return &ev, nil
}

// cancelIterations closes the iterations of the loop runs a stop ended
// (README "The soak"): every iteration record still running — released
// between two units (a delayed retry), left by a dead holder, parked in
// the DLQ — is canceled and gets its loop.iteration.canceled; a record
// held by a live unit is left to that unit, which cancels it at its next
// task boundary. Records canceled earlier have their events published
// again (idempotent), so a stop repeated after a crash completes it.
func (c *Control) cancelIterations(ctx context.Context, executionID string) error {
	rec, err := c.Store.ExecutionGet(ctx, executionID)
	if err != nil {
		return err
	}
	st := rec.State
	if !st.Terminal() {
		return nil
	}
	names := make([]string, 0, len(st.Steps))
	for name, ss := range st.Steps {
		if ss.Loop != nil && ss.Status == types.StatusCanceled {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	clock := types.HLC(st.Clock, c.now())
	reason := fmt.Sprintf("the execution ended (%s)", st.Status)
	for _, name := range names {
		ss := st.Steps[name]
		key := engine.LoopKey(name, ss.Run)
		leases, err := c.Store.IterationRunning(ctx, executionID, key)
		if err != nil {
			return err
		}
		var evs []types.Event
		for _, l := range leases {
			if l.Status == types.StatusRunning {
				if _, parked := store.ParkedBy(l.Holder); !parked && l.Holder != "" && l.Expires.After(c.now()) {
					continue // a live unit: it cancels its record itself
				}
			}
			clock++
			cmd := types.Command{ExecutionID: executionID, Step: name, StepRun: ss.Run, Iteration: types.IntPtr(l.Index)}
			ev, err := c.CancelIteration(ctx, cmd, "", reason, clock)
			if err != nil {
				return err
			}
			if ev != nil {
				evs = append(evs, *ev)
			}
		}
		if len(evs) == 0 {
			continue
		}
		parts := []string{executionID, "iterations canceled", key}
		for _, e := range evs {
			parts = append(parts, e.EventID)
		}
		if err := c.Bus.PublishBatch(ctx, types.Batch{ID: types.DeriveID(parts...), ExecutionID: executionID, Source: c.Source, Events: evs}); err != nil {
			return err
		}
	}
	return nil
}
