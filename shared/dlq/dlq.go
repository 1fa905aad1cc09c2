// Package dlq carries out the operations on dead-lettered entries (seed
// 000 §8.6 "Handling DLQ"): replaying an entry — a unit as a new Cloud
// Task of the same unit, a message published again on its topic — and
// discarding one (a unit's parked step run, or iteration, then fails with
// error kind dead_lettered). The api's /dlq handlers call it; it holds the
// rules, the handlers only map its errors to HTTP statuses.
//
// Each operation is two calls — the effect (the task, the message, the
// failed step run) and the entry's new status — and may fail between
// them (README "The soak"). The effect comes first and is idempotent (a replayed
// unit's task name derives from the unit and its replay count, so a
// second create is a duplicate; a discard repeated finishes what the
// first left undone), so a retry of a failed operation completes it
// instead of finding the entry marked and refusing. An entry whose unit
// completed meanwhile (through another delivery) is resolved done, and
// replaying it is refused with ErrAlreadyDone — never a second run.
package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// Errors of the operations, tested with errors.Is (each wraps one of
// these with the entry's details).
var (
	// ErrNotPending: the entry was replayed or discarded already (code
	// FailedPrecondition: HTTP 409).
	ErrNotPending = &errs.Error{Code: errs.FailedPrecondition, Msg: "dlq: the entry is not pending"}
	// ErrAlreadyDone: the entry's unit completed (or its step run or
	// execution ended) without it: the entry is done and there is nothing
	// to replay or discard (code FailedPrecondition: HTTP 409, status
	// "done").
	ErrAlreadyDone = &errs.Error{Code: errs.FailedPrecondition, Msg: "dlq: the entry's unit already ended"}
	// ErrUnreplayable: the entry holds nothing that can run again (a unit
	// that never decoded, a message without a topic, an unknown kind):
	// code InvalidArgument (HTTP 422).
	ErrUnreplayable = &errs.Error{Code: errs.InvalidArgument, Msg: "dlq: the entry cannot be replayed"}
	// ErrBadPatch: a replay's patch does not apply (code InvalidArgument:
	// HTTP 400).
	ErrBadPatch = &errs.Error{Code: errs.InvalidArgument, Msg: "dlq: bad patch"}
)

// Republisher publishes a dead-lettered message again (pubsubbus.PubSub).
type Republisher interface {
	Republish(ctx context.Context, topic string, data []byte, attrs map[string]string) error
}

// UnitDiscarder fails a dead-lettered unit's parked step run or iteration
// (worker.Worker.DiscardUnit: idempotent, marking the entry discarded in
// the same commit when it parks the unit; worker.ErrUnitEnded when the
// unit had ended otherwise).
type UnitDiscarder interface {
	DiscardUnit(ctx context.Context, cmd types.Command, dlqID, reason string) error
}

// Ops carries out DLQ operations. Set every field but Log.
type Ops struct {
	Store   store.Store
	Tasks   tasks.Creator
	Bus     Republisher
	Control *control.Control
	Units   UnitDiscarder
	Log     *slog.Logger
}

// Result is an operation's outcome: the entry and its status after it.
type Result struct {
	ID     string          `json:"id"`
	Status store.DLQStatus `json:"status"`
}

func (o *Ops) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.Default()
}

// Replay replays entry id: a unit entry as a new Cloud Task of its unit
// (Replay+1, ReplayOf the entry: the one delivery allowed to run the
// parked unit), with patch applied — dotted paths into the unit's command
// (e.g. "args.page", "item.url"), values JSON (a bare word is a string) —
// and a message entry published again on its topic (no patch). The entry
// is marked replayed after the dispatch. Errors: store.ErrNotFound,
// ErrNotPending, ErrAlreadyDone (the entry is then done), ErrUnreplayable,
// ErrBadPatch, and store, Cloud Tasks and Pub/Sub errors (retry the
// operation: it completes what a failed one left).
func (o *Ops) Replay(ctx context.Context, id string, patch map[string]any) (Result, error) {
	e, err := o.pending(ctx, id)
	if err != nil {
		return Result{ID: id, Status: statusOf(e)}, err
	}
	note := ""
	if len(patch) > 0 {
		b, _ := json.Marshal(patch)
		note = "patch " + string(b)
	}
	raw, err := e.UnitBytes()
	if err != nil {
		return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: %v", ErrUnreplayable, err)
	}
	switch e.Kind {
	case store.DLQUnit:
		var cmd types.Command
		if err := jsonx.Unmarshal(raw, &cmd); err != nil || cmd.ExecutionID == "" {
			return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: it does not hold a replayable unit (it never decoded)", ErrUnreplayable)
		}
		store.NormCommand(&cmd)
		if res, err := o.resolveEnded(ctx, e, cmd); err != nil || res != nil {
			return *res, err
		}
		patched, err := PatchCommand(cmd, e.ToolKind, patch)
		if err != nil {
			return Result{ID: id, Status: e.Status}, err
		}
		patched.Replay = cmd.Replay + 1
		patched.ReplayOf = e.MessageID
		patched.Reclaim = 0
		patched.NotBefore = time.Time{}
		patched.ID = patched.TaskName()
		if _, err := o.Tasks.TaskCreate(ctx, patched, time.Now()); err != nil {
			return Result{ID: id, Status: e.Status}, err
		}
		if err := faults.Inject(faults.DLQReplayAfterDispatch, e.ExecutionID); err != nil {
			return Result{ID: id, Status: e.Status}, err
		}
	case store.DLQMessage:
		if e.Topic == "" {
			return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: it names no topic to publish on", ErrUnreplayable)
		}
		if len(patch) > 0 {
			return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: a message entry is replayed as it arrived; patch is for unit entries", ErrBadPatch)
		}
		if err := o.Bus.Republish(ctx, e.Topic, raw, e.Attributes); err != nil {
			return Result{ID: id, Status: e.Status}, err
		}
		if err := faults.Inject(faults.DLQReplayAfterDispatch, e.ExecutionID); err != nil {
			return Result{ID: id, Status: e.Status}, err
		}
	default:
		return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: kind %q", ErrUnreplayable, e.Kind)
	}
	res, err := o.mark(ctx, e, store.DLQReplayed, note)
	if err == nil {
		o.log().InfoContext(ctx, "dlq entry replayed", "dlq_id", id, "execution_id", e.ExecutionID, "patch", note)
	}
	return res, err
}

// Discard discards entry id with reason (required): a unit entry's parked
// step run (or iteration) fails with error kind dead_lettered, then the
// entry is marked discarded (the worker marks it in the same commit when
// the entry parks its unit); a message entry is only marked. Discarding
// an entry again finishes what a failed discard left and returns
// discarded. Errors: store.ErrNotFound, ErrNotPending (replayed),
// ErrAlreadyDone, ErrBadPatch for an empty reason, and store, Cloud Tasks
// and Pub/Sub errors (retry).
func (o *Ops) Discard(ctx context.Context, id, reason string) (Result, error) {
	if strings.TrimSpace(reason) == "" {
		return Result{ID: id}, fmt.Errorf("%w: discard needs a reason", ErrBadPatch)
	}
	e, err := o.Store.DLQGet(ctx, id)
	if err != nil {
		return Result{ID: id}, err
	}
	switch e.Status {
	case store.DLQPending:
	case store.DLQDiscarded:
		// Repeated (the first one may have failed after its commit):
		// finish its work; the entry keeps its first reason.
		reason = e.Note
	case store.DLQDone:
		return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: entry %s is done (%s)", ErrAlreadyDone, id, e.Note)
	default:
		return Result{ID: id, Status: e.Status}, fmt.Errorf("%w: entry %s is %s", ErrNotPending, id, e.Status)
	}
	if e.Kind == store.DLQUnit {
		var cmd types.Command
		if raw, err := e.UnitBytes(); err == nil && jsonx.Unmarshal(raw, &cmd) == nil && cmd.ExecutionID != "" {
			store.NormCommand(&cmd)
			err := o.Units.DiscardUnit(ctx, cmd, e.MessageID, reason)
			if errors.Is(err, worker.ErrUnitEnded) {
				res, merr := o.mark(ctx, e, store.DLQDone, "discarded after its unit had ended: "+err.Error())
				if merr != nil {
					return res, merr
				}
				return res, fmt.Errorf("%w: %v", ErrAlreadyDone, err)
			}
			if err != nil {
				return Result{ID: id, Status: e.Status}, err
			}
			if err := faults.Inject(faults.DLQDiscardAfterFail, e.ExecutionID); err != nil {
				return Result{ID: id, Status: e.Status}, err
			}
		}
	}
	res, err := o.mark(ctx, e, store.DLQDiscarded, reason)
	if err == nil {
		o.log().InfoContext(ctx, "dlq entry discarded", "dlq_id", id, "execution_id", e.ExecutionID, "reason", reason)
	}
	return res, err
}

// pending reads entry id and refuses it unless pending.
func (o *Ops) pending(ctx context.Context, id string) (*store.DLQEntry, error) {
	e, err := o.Store.DLQGet(ctx, id)
	if err != nil {
		return nil, err
	}
	switch e.Status {
	case store.DLQPending:
		return e, nil
	case store.DLQDone:
		hint := ""
		if e.Kind == store.DLQUnit {
			hint = fmt.Sprintf("; a done entry is the record of a step that already failed: rerun the execution from it (noetl rerun %s --from failed), or set NOETL_DLQ_HOLD=true (a playbook: executor.spec.dlq_hold: true) to park such failures for replay", e.ExecutionID)
		}
		return e, fmt.Errorf("%w: entry %s is done (%s)%s", ErrAlreadyDone, id, e.Note, hint)
	}
	return e, fmt.Errorf("%w: entry %s is %s, only pending entries can be replayed", ErrNotPending, id, e.Status)
}

// resolveEnded marks a unit entry done when its unit ended otherwise and
// returns the refusal (nil, nil while the unit can run).
func (o *Ops) resolveEnded(ctx context.Context, e *store.DLQEntry, cmd types.Command) (*Result, error) {
	why, err := o.Control.UnitEnded(ctx, cmd)
	if err != nil {
		return &Result{ID: e.MessageID, Status: e.Status}, err
	}
	if why == "" {
		return nil, nil
	}
	res, err := o.mark(ctx, e, store.DLQDone, why)
	if err != nil {
		return &res, err
	}
	return &res, fmt.Errorf("%w: %s", ErrAlreadyDone, why)
}

// mark moves the entry from pending to status. When it is no longer
// pending, the status it has is the answer if it is the one asked for (a
// repeated operation, or the unit's own commit marked it) — done is
// ErrAlreadyDone, anything else ErrNotPending.
func (o *Ops) mark(ctx context.Context, e *store.DLQEntry, status store.DLQStatus, note string) (Result, error) {
	_, err := o.Store.DLQSetStatus(ctx, e.MessageID, store.DLQPending, status, note)
	if err == nil {
		return Result{ID: e.MessageID, Status: status}, nil
	}
	if !errs.Is(err, errs.FailedPrecondition) {
		return Result{ID: e.MessageID, Status: e.Status}, err
	}
	cur, gerr := o.Store.DLQGet(ctx, e.MessageID)
	if gerr != nil {
		return Result{ID: e.MessageID, Status: e.Status}, gerr
	}
	switch {
	case cur.Status == status:
		return Result{ID: e.MessageID, Status: status}, nil
	case cur.Status == store.DLQDone:
		return Result{ID: e.MessageID, Status: cur.Status}, fmt.Errorf("%w: entry %s is done (%s)", ErrAlreadyDone, e.MessageID, cur.Note)
	}
	return Result{ID: e.MessageID, Status: cur.Status}, fmt.Errorf("%w: entry %s is %s", ErrNotPending, e.MessageID, cur.Status)
}

func statusOf(e *store.DLQEntry) store.DLQStatus {
	if e == nil {
		return ""
	}
	return e.Status
}

// Patchable are the fields of a unit's command a replay may patch (the
// first part of a patch path): the unit's inputs and pipeline state,
// never what names the unit or its delivery (execution, step, run,
// iteration, cursor position, replay and lease bookkeeping) — a patch
// cannot make a replay run another unit.
var Patchable = map[string]bool{"args": true, "item": true, "iter": true, "prev": true, "vars": true,
	"step_vars": true, "ctx_patch": true, "task_results": true}

// PatchCommand applies dotted-path patches to a command (through its JSON
// form): each key is a path into the command ("args.page", "item.url")
// under one of the Patchable fields, its value JSON or, when it does not
// parse, a string. A path "spec.<key>" corrects the rendered configuration
// of the failed task instead (types.Command.SpecPatch; the entry's "spec"
// shows it): key must be one of kind's typed spec (shared/toolspec; an
// alias is read as its key) and the value of its type. ErrBadPatch when a
// path is not patchable, crosses a value that is not a mapping, a spec
// key or value is not the kind's, or the result is not a command.
func PatchCommand(cmd types.Command, kind string, patch map[string]any) (types.Command, error) {
	if len(patch) == 0 {
		return cmd, nil
	}
	spec := map[string]any{}
	rest := map[string]any{}
	for path, v := range patch {
		if key, ok := strings.CutPrefix(path, "spec."); ok {
			if key == "" || strings.Contains(key, ".") {
				return cmd, fmt.Errorf("%w: %q: a spec patch names one key of the task's configuration (spec.url, spec.method, ...)", ErrBadPatch, path)
			}
			spec[key] = parseValue(v)
			continue
		}
		if top, _, _ := strings.Cut(path, "."); !Patchable[top] {
			return cmd, fmt.Errorf("%w: %q: only the unit's inputs (paths under args, item, iter, prev, vars, step_vars, ctx_patch, task_results) and the failed task's configuration (spec.<key>) can be patched", ErrBadPatch, path)
		}
		rest[path] = v
	}
	if len(spec) > 0 {
		if kind == "" || len(toolspec.Fields(kind)) == 0 {
			return cmd, fmt.Errorf("%w: the entry names no tool kind with a typed spec (%q): spec patches cannot be checked", ErrBadPatch, kind)
		}
		canon, probs := toolspec.Canonicalize(kind, spec)
		probs = append(probs, toolspec.Check(kind, canon)...)
		if len(probs) > 0 {
			var msgs []string
			for _, p := range probs {
				if p.Warning {
					continue
				}
				m := p.Error()
				if p.Unknown {
					m = fmt.Sprintf("%s does not read %q (it reads %s)", kind, p.Key, strings.Join(toolspec.Keys(kind), ", "))
				}
				msgs = append(msgs, m)
			}
			if len(msgs) > 0 {
				return cmd, fmt.Errorf("%w: not a %s task's configuration: %s", ErrBadPatch, kind, strings.Join(msgs, "; "))
			}
		}
		if cmd.SpecPatch == nil {
			cmd.SpecPatch = map[string]any{}
		}
		for k, v := range canon {
			cmd.SpecPatch[k] = v
		}
	}
	patch = rest
	if len(patch) == 0 {
		return cmd, nil
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return cmd, err
	}
	var m map[string]any
	if err := jsonx.Unmarshal(b, &m); err != nil {
		return cmd, err
	}
	for path, v := range patch {
		v = parseValue(v)
		parts := strings.Split(path, ".")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				if cur[p] != nil {
					return cmd, fmt.Errorf("%w: %s: %s is not a mapping", ErrBadPatch, path, p)
				}
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = v
	}
	b, _ = json.Marshal(m)
	var out types.Command
	if err := jsonx.Unmarshal(b, &out); err != nil {
		return cmd, fmt.Errorf("%w: the patch makes an invalid unit: %v", ErrBadPatch, err)
	}
	store.NormCommand(&out)
	return out, nil
}

// parseValue reads a patch value: a string that parses as JSON is that
// JSON, anything else is itself.
func parseValue(v any) any {
	if s, ok := v.(string); ok {
		var parsed any
		if jsonx.Unmarshal([]byte(s), &parsed) == nil {
			return parsed
		}
	}
	return v
}
