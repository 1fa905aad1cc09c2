package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// repairResult runs a types.CmdRepairResult (`noetl results repair`,
// shared/operations/gc repair.go): the producing task of a lost result runs
// again with the inputs its attempt recorded, under the execution's
// ownership rules and credential grants, its table streamed into a
// scratch version of the result's coordinates; gc.Rederive puts it back
// only if it has the reference's sha256. The outcome is recorded in the
// execution's log: result.repaired, or result.repair_failed with the
// reason. A failure of the tier or the store is returned (Cloud Tasks
// redelivers the unit); every other outcome acks it.
func (w *Worker) repairResult(ctx context.Context, cmd types.Command, rec *store.Execution, log *slog.Logger) error {
	o := cmd.Repair
	if o == nil {
		return errs.New(errs.InvalidArgument, "worker: a repair unit without its order")
	}
	uri, _ := o.Ref["uri"].(string)
	key, _ := o.Ref["key"].(string)
	lostGen, _ := o.Ref[results.GenerationKey].(int64)
	rs, ok := w.Results.(*results.Store)
	if !ok {
		return errs.New(errs.FailedPrecondition, "worker: no results tier to repair %s in", uri)
	}
	pb, err := w.playbook(rec.Source)
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "worker: the execution's playbook no longer loads")
	}
	step := pb.Step(cmd.Step)
	tool := w.Tools[o.Kind]
	payload := history.ResultRepaired{URI: uri, Key: key, Lost: lostGen, Task: o.Task, Principal: o.Principal, RequestID: o.RequestID}
	var res gc.Rederived
	switch {
	case step == nil:
		err = fmt.Errorf("%w: step %s is not a step of the execution's playbook", gc.ErrNotRepairable, cmd.Step)
	case tool == nil:
		err = fmt.Errorf("%w: task kind %s is not available in this engine", gc.ErrNotRepairable, o.Kind)
	default:
		u := &unit{w: w, cmd: cmd, rec: rec, st: rec.State, pb: pb, step: step, log: log}
		timeout := w.ToolTimeout.Seconds()
		for _, t := range step.Tasks {
			if t.Name == o.Task && t.TimeoutS > 0 {
				timeout = t.TimeoutS
			}
		}
		log.Info("repair: re-deriving a lost result", "uri", uri, "task", o.Task, "kind", o.Kind, "principal", o.Principal)
		res, err = gc.Rederive(ctx, gc.RederiveParams{Store: rs, Order: *o, Options: u.storeOptions(),
			Run: func(ctx context.Context, newSink func() *results.Sink) types.Outcome {
				// The task reads what its execution may read, with the
				// credentials its playbook is granted, as when it ran.
				ctx = results.WithReader(ctx, w.reader(rec.State))
				ctx = credentials.WithGrantee(ctx, launch.Grantee(rec.State))
				ctx = results.WithSinks(ctx, newSink)
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second))+2*time.Second)
					defer cancel()
				}
				return tool.Run(ctx, tools.Request{ExecutionID: cmd.ExecutionID, Step: step.Name, Task: o.Task, Attempt: o.Attempt,
					Args: o.Args, Config: o.Config, TimeoutS: timeout})
			}})
	}
	typ := types.EvResultRepaired
	switch {
	case err == nil:
		payload.Generation, payload.SHA256 = res.Generation, res.SHA256
		log.Info("repair: result restored", "uri", uri, "generation", res.Generation, "lost_generation", lostGen)
	case errors.Is(err, gc.ErrNotRepairable), errors.Is(err, gc.ErrNotDeterministic), errors.Is(err, gc.ErrIntact):
		typ, payload.Message, payload.SHA256 = types.EvResultRepairFailed, err.Error(), res.SHA256
		log.Warn("repair: result not restored", "uri", uri, "error", err.Error())
	default:
		return err // the tier or the store: redelivered
	}
	now := w.now()
	ev := types.NewEvent(typ, cmd.ExecutionID, Source, now, "repair", o.RequestID, uri)
	ev.Clock = types.HLC(rec.State.Clock, now) + 1
	ev.EntityType, ev.EntityID, ev.Step, ev.StepRun, ev.Task = "result", uri, cmd.Step, cmd.StepRun, o.Task
	ev.Status = map[types.EventType]types.Status{types.EvResultRepaired: types.StatusOK, types.EvResultRepairFailed: types.StatusError}[typ]
	ev.Payload = history.Encode(payload)
	return w.Bus.PublishBatch(ctx, types.Batch{ID: types.DeriveID(cmd.ExecutionID, "repair", o.RequestID), ExecutionID: cmd.ExecutionID, Source: Source,
		Events: []types.Event{ev}})
}
