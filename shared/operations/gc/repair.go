package gc

// Repair (NoETL result storage RFC "Phase F" DR, "verify-and-repair": a
// lost result is re-derived from its producer where the producer is
// deterministic and side-effect free). `noetl results
// repair URN` asks the api, which plans the repair here (PlanRepair:
// every rule below is checked, and a refusal names the one that fails);
// execute then re-runs the producing task (a types.CmdRepairResult unit:
// shared/worker repair.go calls Rederive), compares what it gives with
// the reference's sha256, and only then puts it back at the result's key
// as a new generation that stands in for the lost one (results.Restore,
// results.MetaRepairs). The outcome is a result.repaired or
// result.repair_failed event in the execution's log.
//
// Which producers qualify, exactly (Repairable, PlanRepair):
//
//   - kind duckdb on an in-memory database (no database / db_path / path
//     / db key, or ":memory:"), not a workbook call: its SQL runs on a fresh
//     database in the runner's sandbox with external access off and no
//     extensions, inside a private workspace thrown away after the task,
//     so it can read nothing but its inputs (granted stored results) and
//     leave nothing behind: running it again has no effect outside the
//     engine, whatever the side-effect barrier it ran under (the engine's
//     static classification is conservative: every duckdb task is
//     barriered). Whether it is deterministic (an ORDER BY, no random(),
//     now() or gen_random_uuid()) is not guessed: the re-derived bytes
//     must have the reference's sha256, or nothing is written;
//   - the result is the table that task streamed into the tier (Feather:
//     a JSON result, or a step's result the engine stored after shaping
//     it, is not what the task alone gives);
//   - the attempt that produced it recorded its rendered inputs (the
//     task.attempt.* event's inputs; recorded for the tasks above only,
//     up to MaxRecordedInputs), and every stored result those inputs name
//     is intact (a lost input is repaired first);
//   - it is not a loop iteration's (the item is an input the log does not
//     record) nor a page after a pagination jump (it depends on the
//     previous page).
//
// Refused, with the reason: every other kind — postgres, http, transfer,
// gcs, nats and subscription read state outside the engine that may have
// changed (and those that write would repeat their effect: they run under
// the side-effect barrier); python and shell run author code that may
// reach the network through the egress policy, read the clock or write
// where they may, so they are not provably side-effect free; playbook
// starts a child execution; noop, secrets and artifact results are not
// tables a task streamed. A result that is intact is not repaired.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// MaxRecordedInputs bounds the JSON of the rendered inputs a repairable
// task's attempt records (history.TaskInputs): larger inputs are not
// recorded, and its result cannot be repaired.
const MaxRecordedInputs = 32 << 10

// ErrNotRepairable wraps every refusal of PlanRepair and Rederive that
// names a rule the result breaks (code FailedPrecondition: asking again
// changes nothing).
var ErrNotRepairable = errs.Sentinel(errs.FailedPrecondition, "the result cannot be repaired")

// ErrIntact is PlanRepair's and Rederive's answer for a result that is
// not lost (code FailedPrecondition).
var ErrIntact = errs.Sentinel(errs.FailedPrecondition, "the result is intact: there is nothing to repair")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotRepairable, fmt.Sprintf(format, args...))
}

// Repairable reports whether a task of kind with the rendered
// configuration cfg is a producer whose result may be re-derived (see
// the file comment), and why not.
func Repairable(kind string, cfg map[string]any) (bool, string) {
	switch kind {
	case "duckdb":
		for _, k := range []string{"database", "db_path", "path", "db"} {
			if v, ok := cfg[k]; ok && v != nil && v != "" && v != ":memory:" {
				return false, fmt.Sprintf("its duckdb task opens the database %v, which outlives it and may have changed: only a task on an in-memory database is re-derived", v)
			}
		}
		return true, ""
	case "postgres", "http", "transfer", "gcs", "nats", "subscription":
		return false, fmt.Sprintf("its task (kind %s) reads state outside the engine that may have changed since, and running it again may repeat what it wrote", kind)
	case "python", "shell":
		return false, fmt.Sprintf("its task (kind %s) runs author code that may reach the network, read the clock or write where it may: it is not provably side-effect free", kind)
	case "playbook":
		return false, "its task starts a child execution"
	case "workbook":
		return false, "its task calls a workbook entry: re-derivation runs only a duckdb task written in its step"
	}
	return false, fmt.Sprintf("its task (kind %s) does not stream a table into the tier", kind)
}

// RecordInputs returns the inputs a repairable task's attempt records
// (history.TaskAttempt.Inputs), or nil when the task is not repairable or
// they are over MaxRecordedInputs.
func RecordInputs(kind string, cfg, args map[string]any) *history.TaskInputs {
	if ok, _ := Repairable(kind, cfg); !ok {
		return nil
	}
	in := &history.TaskInputs{Config: cfg, Args: args}
	if b, err := json.Marshal(in); err != nil || len(b) > MaxRecordedInputs {
		return nil
	}
	return in
}

// PlanRepair checks that the result a URN names may be repaired (every
// rule of the file comment) and returns what execute re-runs. Errors:
// results.ErrBadURI; NotFound for an execution that does not exist or a
// URN its log does not reference; ErrIntact; ErrNotRepairable naming the
// rule the result breaks; the store's and the tier's.
func PlanRepair(ctx context.Context, rs *results.Store, logs Logs, urn, principal string) (types.Command, error) {
	c, err := results.ParseLogicalURI(urn)
	if err != nil {
		return types.Command{}, err
	}
	rec, err := logs.ExecutionGet(ctx, c.ExecutionID)
	if err != nil {
		return types.Command{}, err
	}
	evs, err := logs.EventList(ctx, c.ExecutionID)
	if err != nil {
		return types.Command{}, err
	}
	var ref map[string]any
	for _, r := range References(evs) {
		inner := r[results.RefKey].(map[string]any)
		if inner["uri"] == urn || inner["uri"] == rs.LogicalURI(c) {
			ref = r
			break
		}
	}
	if ref == nil {
		return types.Command{}, errs.New(errs.NotFound, "gc: execution %s's log references no result %s", c.ExecutionID, urn)
	}
	pr, err := rs.ParseRef(ref)
	if err != nil {
		return types.Command{}, err
	}
	if _, err := rs.Verify(ctx, ref, results.ReadCheckSHA256); err == nil {
		return types.Command{}, fmt.Errorf("%w: %s (generation %d, sha256 %s)", ErrIntact, urn, pr.Generation, pr.SHA256)
	} else if results.LostKind(err) == "" {
		return types.Command{}, err
	}
	pb, err := dsl.Load([]byte(rec.Source), "execution")
	if err != nil {
		return types.Command{}, errs.Wrap(errs.InvalidArgument, err, "gc: the execution's playbook no longer loads")
	}
	stepName, taskName, jumps := c.Step, "", "0"
	if pb.Step(stepName) == nil {
		// A task's own result: <step>.<task>.<jumps> (worker lazy.go).
		if i := strings.LastIndexByte(stepName, '.'); i > 0 {
			stepName, jumps = stepName[:i], stepName[i+1:]
			if j := strings.IndexByte(stepName, '.'); j > 0 {
				stepName, taskName = stepName[:j], stepName[j+1:]
			}
		}
	}
	step := pb.Step(stepName)
	if step == nil {
		return types.Command{}, refuse("%s: its step %q is not a step of the execution's playbook", urn, c.Step)
	}
	if jumps != "0" {
		return types.Command{}, refuse("%s is a page after %s pagination jumps: it depends on the page before", urn, jumps)
	}
	if step.Loop != nil {
		return types.Command{}, refuse("%s: step %s is a loop: its items are inputs the log does not record", urn, stepName)
	}
	var task *dsl.Task
	switch {
	case taskName != "":
		for _, t := range step.Tasks {
			if t.Name == taskName {
				task = t
			}
		}
	case len(step.Tasks) == 1:
		task = step.Tasks[0]
	}
	if task == nil {
		return types.Command{}, refuse("%s: no single task of step %s produced it (the step's result of a pipeline is shaped by the engine)", urn, stepName)
	}
	if ok, why := Repairable(task.Kind, task.Config); !ok {
		if engine.SideEffecting(pb, task) && task.Kind != "duckdb" {
			why += " (it runs under the side-effect barrier)"
		}
		return types.Command{}, refuse("%s: %s", urn, why)
	}
	switch {
	case pr.SHA256 == "" || pr.Generation <= 0:
		return types.Command{}, refuse("%s: its reference records no sha256 and generation to reproduce and stand in for", urn)
	case pr.Format != results.FormatFeather:
		return types.Command{}, refuse("%s is stored as %s: only a table a task streamed into the tier (Feather) is re-derived", urn, pr.Format)
	case c.Row != 0:
		return types.Command{}, refuse("%s is a loop iteration's result (row %d): its item is an input the log does not record", urn, c.Row)
	case c.Version != "":
		return types.Command{}, refuse("%s is a second writer's version (@%s) of its coordinates", urn, c.Version)
	}
	// The attempt's recorded inputs.
	var inputs *history.TaskInputs
	for _, e := range evs {
		if (e.EventType != types.EvTaskAttemptDone && e.EventType != types.EvTaskAttemptFailed) || e.Step != stepName || e.StepRun != c.Frame ||
			e.Iteration != nil || e.Task != task.Name || e.Attempt != c.Attempt {
			continue
		}
		if a, err := history.Decode[history.TaskAttempt](e); err == nil && a.Inputs != nil {
			inputs = a.Inputs
		}
	}
	if inputs == nil {
		return types.Command{}, refuse("%s: attempt %d of task %s recorded no inputs (run before inputs were recorded, or over %d KiB)", urn, c.Attempt, task.Name, MaxRecordedInputs>>10)
	}
	if ok, why := Repairable(task.Kind, inputs.Config); !ok {
		return types.Command{}, refuse("%s: %s", urn, why)
	}
	// Its own inputs must be intact.
	var in []types.Event
	in = append(in, types.Event{Payload: map[string]any{"config": inputs.Config, "args": inputs.Args}})
	for _, r := range References(in) {
		if _, err := rs.Verify(ctx, r, ""); err != nil {
			if results.LostKind(err) != "" {
				name := fmt.Sprint(r[results.RefKey].(map[string]any)["uri"])
				return types.Command{}, refuse("%s: its input %s is lost too (%v): repair it first", urn, name, err)
			}
			return types.Command{}, err
		}
	}
	inner := ref[results.RefKey].(map[string]any)
	return types.Command{Kind: types.CmdRepairResult, ExecutionID: c.ExecutionID, Step: stepName, StepRun: c.Frame,
		Repair: &types.RepairOrder{Ref: inner, Task: task.Name, Kind: task.Kind, Attempt: c.Attempt, Config: inputs.Config, Args: inputs.Args, Principal: principal}}, nil
}

// RederiveParams are one repair's re-derivation (execute's side).
type RederiveParams struct {
	// Store is the control plane's tier.
	Store *results.Store
	// Order is what to re-derive (Command.Repair).
	Order types.RepairOrder
	// Options are the lost result's store settings (the step's output
	// block, as the unit that wrote it resolved them: the inline budget
	// and the compression shape the bytes).
	Options results.OffloadOptions
	// Run runs the producing task once with Order's inputs, its table
	// streamed into the sinks newSink makes.
	Run func(ctx context.Context, newSink func() *results.Sink) types.Outcome
}

// Rederived is a repair's outcome.
type Rederived struct {
	// Generation is the repaired object's.
	Generation int64
	// SHA256 is the digest the re-derived bytes matched.
	SHA256 string
}

// ErrNotDeterministic wraps a re-derivation whose bytes differ from the
// lost result's (its producer is not deterministic): nothing is written.
var ErrNotDeterministic = errs.Sentinel(errs.FailedPrecondition, "the re-derived result differs from the lost one")

// Rederive re-runs the producing task into a scratch version of the
// result's coordinates, compares the table it gives with the lost
// reference's sha256, and restores it at the result's key
// (results.Store.Restore); the scratch object is deleted either way.
// Errors: ErrIntact (the result is no longer lost: another repair came
// first); ErrNotRepairable when the task fails or gives no stored table;
// ErrNotDeterministic (with both digests); the tier's.
func Rederive(ctx context.Context, p RederiveParams) (Rederived, error) {
	rs := p.Store
	ref := map[string]any{results.RefKey: p.Order.Ref}
	pr, err := rs.ParseRef(ref)
	if err != nil {
		return Rederived{}, err
	}
	if _, err := rs.Verify(ctx, ref, results.ReadCheckSHA256); err == nil {
		return Rederived{}, fmt.Errorf("%w: %s", ErrIntact, pr.Name())
	} else if results.LostKind(err) == "" {
		return Rederived{}, err
	}
	c, err := results.ParseLogicalURI(pr.URI)
	if err != nil {
		return Rederived{}, err
	}
	c.Version = fmt.Sprintf("repair-%d", pr.Generation)
	// The lost result's own settings, its inline budget included: how a
	// table is cut into record batches depends on it (the sink holds the
	// first rows until they are over the budget), and so do its bytes.
	opts := p.Options
	var scratch []string
	newSink := func() *results.Sink {
		k := rs.NewSink(ctx, c, opts)
		scratch = append(scratch, rs.PhysicalKey(c, results.FormatFeather))
		return k
	}
	defer func() {
		for _, key := range scratch {
			_ = rs.Delete(context.WithoutCancel(ctx), key)
		}
	}()
	out := p.Run(ctx, newSink)
	if out.Status != types.StatusOK {
		msg := string(out.Status)
		if out.Error != nil {
			msg = string(out.Error.Kind) + ": " + out.Error.Message
		}
		return Rederived{}, refuse("%s: task %s failed when run again: %s", pr.Name(), p.Order.Task, msg)
	}
	got := findRef(out.Result)
	if got == nil {
		return Rederived{}, refuse("%s: task %s gave its table inline when run again (under the inline budget): the lost object is the step's result as the engine stored it, not a table the task streamed, and repair re-derives only the latter", pr.Name(), p.Order.Task)
	}
	gr, err := rs.ParseRef(got)
	if err != nil {
		return Rederived{}, err
	}
	if !strings.EqualFold(gr.SHA256, pr.SHA256) {
		return Rederived{SHA256: gr.SHA256}, fmt.Errorf("%w: %s: task %s gave sha256 %s (%d bytes), the reference records %s (%d bytes): its producer is not deterministic (an ORDER BY missing, random(), now()?)",
			ErrNotDeterministic, pr.Name(), p.Order.Task, gr.SHA256, gr.Bytes, pr.SHA256, pr.Bytes)
	}
	gen, err := rs.Restore(ctx, ref, got)
	if errors.Is(err, results.ErrExists) {
		return Rederived{}, fmt.Errorf("%w: %s", ErrIntact, pr.Name())
	}
	if err != nil {
		return Rederived{}, err
	}
	return Rederived{Generation: gen, SHA256: gr.SHA256}, nil
}

// findRef returns the first result reference in v (a tool's result: the
// reference itself, or a map holding it).
func findRef(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		if results.IsRef(x) {
			return x
		}
		for _, e := range x {
			if r := findRef(e); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := findRef(e); r != nil {
				return r
			}
		}
	}
	return nil
}
