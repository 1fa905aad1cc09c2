package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// unrendered config keys: base64 source is passed verbatim; code is
// rendered by renderCode.
var unrendered = map[string]bool{"code": true, "code_b64": true}

// renderCode renders a python task's code (code, an inline script's
// source.code) as NoETL does: its task sequence renders every tool key but
// kind, spec and output (noetl/worker/task_sequence_executor.py) with
// noetl.core.dsl.render.render_template, which renders a string only when
// it holds both {{ and }} (or {% and %}), and returns the string unchanged
// when rendering fails — so code that Jinja2 cannot parse (a dict
// comprehension {{...}}) still runs, while a Jinja2-valid {{ x }} in it is
// replaced as it is there (an undefined name renders empty, also inside a
// python f-string: f"{{x}}" becomes f""). A result that is not text
// (a template that is one expression of a mapping) leaves the code
// unchanged as well. failed reports the rendering error, for the logs.
func renderCode(code any, sc template.Scope) (out any, failed error) {
	s, ok := code.(string)
	if !ok || !(strings.Contains(s, "{{") && strings.Contains(s, "}}") || strings.Contains(s, "{%") && strings.Contains(s, "%}")) {
		return code, nil
	}
	r, err := template.Render(s, sc)
	if err != nil {
		return code, err
	}
	switch x := r.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	}
	return code, nil
}

// logsInEvent bounds the task logs copied into attempt events.
const logsInEvent = 4096

// forcedOffloader stores a value in the results tier whatever its size
// (results.Store.OffloadForced).
type forcedOffloader interface {
	OffloadForced(ctx context.Context, c types.ResultCoords, v any) (any, error)
}

// storeLogs stores an attempt's whole captured log (masked, as the tool
// captured it: python keeps the last 64 KiB) in the results tier when
// its event can carry only the tail, and returns the reference (nil when
// the tier cannot store it: the tail stays the record).
func (u *unit) storeLogs(ctx context.Context, task *dsl.Task, logs string) any {
	f, ok := u.w.Results.(forcedOffloader)
	if !ok {
		return nil
	}
	ref, err := f.OffloadForced(ctx, types.ResultCoords{ExecutionID: u.cmd.ExecutionID, Step: u.cmd.Step + "." + task.Name + "." + itoa(u.cur.Jumps) + ".logs",
		Frame: u.cmd.StepRun, Row: iterOr0(u.cmd.Iteration), Attempt: u.cur.Attempt}, logs)
	if err != nil {
		u.log.Warn("the task's whole log was not stored (its event keeps the tail)", "task", task.Name, "error", err)
		return nil
	}
	return ref
}

// InputInEvent bounds the rendered input (args and config, as JSON)
// copied into an attempt's event (history.TaskAttempt.Input): the
// console's step inspector shows it. Longer input is cut there, with a
// marker saying how long it was.
const InputInEvent = 2048

// inputOf is the rendered args and config of an attempt as its event
// carries them: JSON masked with every rule of the unit's redactor (as
// events are), cut at InputInEvent bytes. A script's code (code,
// code_b64) is left out, its size said instead: the step's source shows
// it.
func (u *unit) inputOf(args, cfg map[string]any) string {
	shown := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if s, ok := v.(string); ok && unrendered[k] {
			v = fmt.Sprintf("(%d bytes: see the step's source)", len(s))
		}
		shown[k] = v
	}
	v := any(map[string]any{"args": args, "config": shown})
	if u.red != nil {
		v = u.red.Value(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	if len(b) > InputInEvent {
		cut := InputInEvent
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + fmt.Sprintf("…(cut at %d of %d bytes)", cut, len(b))
	}
	return string(b)
}

// attempt runs one attempt of the task at the cursor and evaluates its
// policy (engine.DecideTask). suspended reports a `kind: playbook` task
// waiting for its child execution.
func (u *unit) attempt(ctx context.Context, task *dsl.Task) (types.Outcome, engine.Decision, bool, error) {
	attempt := u.cur.Attempt
	if attempt == 1 && u.cmd.ChildID == "" {
		u.event(types.EvTaskStarted, task.Name, "1").Attempt = 1
	}
	st := u.event(types.EvTaskAttemptStarted, task.Name, itoa(attempt))
	st.Attempt = attempt
	u.callID = st.EventID
	st.Payload = history.Encode(history.TaskAttemptStarted{Kind: task.Kind})
	started := u.w.now()
	u.input = ""
	// A stop while the attempt runs interrupts it (interrupt.go).
	actx, endAttempt := u.interruptible(ctx, task.Kind)
	// The attempt runs in its worker.plugin.<kind> span (observe.go).
	out, suspended, err := u.observeAttempt(actx, task, func(ctx context.Context) (types.Outcome, bool, error) {
		if task.Kind == "playbook" {
			return u.runChild(ctx, task)
		}
		o, err := u.runBarriered(ctx, task)
		return o, false, err
	})
	stopped := endAttempt()
	if err != nil {
		if stopped != nil {
			// What failed was cut short by the stop (a store call of the
			// attempt): the unit stops all the same.
			u.log.Info("task attempt interrupted", "task", task.Name, "reason", stopped.Reason, "error", err.Error())
			return types.Outcome{}, engine.Decision{}, false, stopped
		}
		return types.Outcome{}, engine.Decision{}, false, err
	}
	if suspended {
		return types.Outcome{}, engine.Decision{Action: types.ActSuspend, Rule: -1}, true, nil
	}
	if stopped != nil && out.Status != types.StatusOK {
		// Whatever the tool made of its canceled context, the attempt
		// ends as canceled: no policy, no retry.
		out = types.Outcome{Status: types.StatusCanceled, Error: &types.TaskError{Kind: types.ErrKindCanceled,
			Message: fmt.Sprintf("step %s task %s: %s", u.step.Name, task.Name, stopped.Error())}, Logs: out.Logs}
	} else {
		stopped = nil // it ended on its own first: its outcome counts
	}
	if task.Kind == "playbook" {
		out = u.bound(ctx, task, out) // a child's failure quoted in its parent
	}
	out.Meta = types.OutcomeMeta{Attempt: attempt, DurationMS: u.w.now().Sub(started).Milliseconds(), StartedAt: started.UTC()}
	typ := types.EvTaskAttemptDone
	if out.Status != types.StatusOK {
		typ = types.EvTaskAttemptFailed
	}
	ae := u.event(typ, task.Name, itoa(attempt))
	ae.Attempt, ae.Status, ae.DurationMS = attempt, out.Status, out.Meta.DurationMS
	ap := history.TaskAttempt{Kind: task.Kind, Adopted: out.Extra["adopted"] == true, Input: u.input, Inputs: u.inputs}
	u.inputs = nil
	if out.Error != nil {
		ap.Error = &history.AttemptError{Kind: string(out.Error.Kind), Message: out.Error.Message, Retryable: out.Error.Retryable, Status: out.Error.Status}
	}
	if out.HTTP != nil {
		ap.HTTPStatus = &out.HTTP.Status
	}
	if vals, ok := out.Extra["secrets"].([]string); ok && len(vals) > 0 {
		// Values read by a secrets task are masked from here on, in the
		// unit's events and logs like the keychain's.
		u.addSecrets(vals)
	}
	if out.Logs != "" {
		l := out.Logs
		if u.red != nil {
			l = u.red.String(l)
		}
		if len(l) > logsInEvent {
			ap.LogsRef = u.storeLogs(ctx, task, l)
			l = l[len(l)-logsInEvent:]
		}
		ap.Logs = l
		u.log.Info("task output", "task", task.Name, "logs", l)
	}
	ae.Payload = history.Encode(ap)
	if stopped != nil {
		ce := u.event(types.EvTaskCanceled, task.Name, itoa(attempt))
		ce.Attempt, ce.Status = attempt, types.StatusCanceled
		ce.Payload = history.Encode(history.TaskCanceled{Reason: stopped.Reason})
		u.log.Info("task attempt interrupted: its execution or step run ended while it ran", "task", task.Name, "reason", stopped.Reason,
			"duration_ms", out.Meta.DurationMS)
		return out, engine.Decision{}, false, stopped
	}
	if out.Status != types.StatusOK && out.Error != nil {
		msg := out.Error.Message
		if u.red != nil {
			msg = u.red.String(msg)
		}
		u.log.Warn("task attempt failed", "task", task.Name, "error_kind", out.Error.Kind, "error", msg)
	}
	u.accumulate(task, out) // hook (h-conf): output.accumulate (output.go)
	sc := u.scope(engine.PolicyExtra(out, u.cur, engine.HasLegacyRules(task)))
	if out.Status == types.StatusOK && len(task.Set) > 0 {
		// A tool item's own set (DSL v2) applies after its successful
		// attempt, before its policy is evaluated; its output also reads
		// the result's fields (engine.SetExtra).
		if err := engine.ApplyPatches(&u.cur, task.Set, u.scope(engine.SetExtra(out, u.cur, engine.HasLegacyRules(task)))); err != nil {
			out.Status = types.StatusError
			out.Error = &types.TaskError{Kind: types.ErrKindTemplate, Message: fmt.Sprintf("task %s: %v", task.Name, err)}
			out.Bound(u.w.ErrorMax, ErrorMaxSetting)
			return out, engine.Decision{Action: types.ActFail, Rule: -1}, false, nil
		}
		sc = u.scope(engine.PolicyExtra(out, u.cur, engine.HasLegacyRules(task)))
	}
	// A task without a policy gets the deployment's defaults (retryable
	// errors retried with jittered backoff, engine.Options.DecideTask).
	d, err := u.w.Control.Opts.DecideTask(task, engine.IsSink(u.pb, task, toolKind(u.pb, task)), out, sc)
	if err != nil {
		// A policy that cannot be evaluated fails the task (never guesses).
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindTemplate, Message: err.Error()}
		out.Bound(u.w.ErrorMax, ErrorMaxSetting)
		return out, engine.Decision{Action: types.ActFail, Rule: -1}, false, nil
	}
	return out, d, false, nil
}

// barrierKey names a task attempt within its unit: the pipeline position,
// the attempt and the jumps taken (a page of a pagination loop).
func (u *unit) barrierKey() string {
	return itoa(u.cur.TaskIndex) + "." + itoa(u.cur.Attempt) + "." + itoa(u.cur.Jumps)
}

// runBarriered runs a task behind the side-effect barrier (NoETL result storage RFC §4.4):
// a side-effecting task's outcome is made durable as soon as it returns,
// under its coordinates (execution, unit = step run and iteration, task,
// attempt, page); a unit that may have run before (a retried delivery, a
// reclaim after its holder died) adopts that outcome instead of running
// the task again. Read-only tasks simply run.
func (u *unit) runBarriered(ctx context.Context, task *dsl.Task) (types.Outcome, error) {
	if !engine.SideEffecting(u.pb, task) {
		return u.runTool(ctx, task, ""), nil
	}
	key := u.barrierKey()
	if u.recovering {
		prev, err := u.w.Store.AttemptGet(ctx, u.cmd.ExecutionID, u.cmd.UnitKey(), key)
		if err == nil {
			u.log.Info("adopting the durable outcome of a task attempt that ran before", "task", task.Name, "attempt", u.cur.Attempt, "jumps", u.cur.Jumps)
			if u.w.Results != nil && results.IsRef(prev.Result) {
				if prev.Result, err = u.w.Results.Resolve(ctx, prev.Result); err != nil {
					if em, ok := resultFailure(err); ok { // the recorded result is lost: fail once, never redeliver
						return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrorKindOf(em["kind"].(string)), Message: fmt.Sprintf("step %s task %s: the recorded result of its attempt: %v", u.step.Name, task.Name, em["message"])}}, nil
					}
					return types.Outcome{}, fmt.Errorf("worker: load the recorded result of %s: %w", task.Name, err)
				}
			}
			prev.Extra = map[string]any{"adopted": true}
			return *prev, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return types.Outcome{}, err
		}
	}
	// The key also goes to the tool: postgres commits it with the task's
	// SQL, closing the window between the side effect and AttemptPut (a
	// crash there re-runs the task; postgres then returns the result it
	// recorded instead of running the SQL again).
	out := u.runTool(ctx, task, u.cmd.ExecutionID+"/"+u.cmd.UnitKey()+"/"+key)
	var ie *Interrupted
	if errors.As(context.Cause(ctx), &ie) && out.Status != types.StatusOK {
		// Interrupted (interrupt.go): what the task did is unknown, and
		// nothing of its step run follows; no record is made.
		return out, nil
	}
	rec := u.maskOutcome(out) // the attempt record holds no secret (redact.go)
	rec.Logs = ""
	coords := types.ResultCoords{ExecutionID: u.cmd.ExecutionID, Step: u.cmd.Step + "." + task.Name + "." + itoa(u.cur.Jumps),
		Frame: u.cmd.StepRun, Row: iterOr0(u.cmd.Iteration), Attempt: u.cur.Attempt}
	// The record waits for the attempt's move (pending.go): the end of
	// its unit carries the outcome itself, any other move writes it first.
	rctx := context.WithoutCancel(ctx)
	u.record = func() error {
		if u.w.Results != nil {
			// A large result goes to the results tier; the record keeps
			// the reference (resolved again when adopted).
			ref, err := u.w.Results.Offload(rctx, coords, rec.Result)
			if err != nil {
				return fmt.Errorf("worker: store the result of %s: %w", task.Name, err)
			}
			if ref != nil {
				rec.Result = ref
			}
		}
		return u.w.Store.AttemptPut(rctx, u.cmd.ExecutionID, u.cmd.UnitKey(), key, rec)
	}
	if f := faults.DrawFor(faults.ExecuteAfterTool, u.cmd.ExecutionID, u.cmd.Step, u.st.Workload, u.cmd.Replay > 0 || u.cmd.ReplayOf != ""); f != nil {
		// The point's state: the outcome recorded, the unit not ended.
		if err := u.settle(false); err != nil {
			return types.Outcome{}, err
		}
		if err := f.Inject(); err != nil {
			return types.Outcome{}, err
		}
	}
	return out, nil
}

// runTool renders the task and runs its tool with the side-effect barrier
// key barrier ("" outside the barrier). Rendering errors become an error
// outcome of kind "template" naming the step and task. The outcome is
// bounded (bound.go) before anything stores it.
func (u *unit) runTool(ctx context.Context, task *dsl.Task, barrier string) types.Outcome {
	return u.bound(ctx, task, u.runToolUnbounded(ctx, task, barrier))
}

// runToolUnbounded is runTool before its outcome is bounded.
func (u *unit) runToolUnbounded(ctx context.Context, task *dsl.Task, barrier string) types.Outcome {
	args, cfg, fail, bad := u.render(task)
	if bad != nil {
		return *bad
	}
	u.input = u.inputOf(args, cfg)
	kind := task.Kind
	sc := u.taskScope()
	if kind == "workbook" {
		name, _ := cfg["name"].(string)
		wt := u.pb.Workbook[name]
		if wt == nil {
			return fail(types.ErrKindConfig, fmt.Sprintf("workbook task %q not found", name))
		}
		kind = wt.Kind
		// The call's name names the entry; it is no key of the entry's
		// kind (a secrets entry would read it as the secret's name).
		delete(cfg, "name")
		for k, v := range wt.Config {
			if _, set := cfg[k]; set && k != "name" {
				continue
			}
			if k == "code" {
				cfg[k] = u.code(task, v, sc)
				continue
			}
			if unrendered[k] {
				cfg[k] = v
				continue
			}
			r, err := template.RenderValue(v, sc)
			if err != nil {
				return fail(types.ErrKindTemplate, "workbook "+k+": "+err.Error())
			}
			cfg[k] = r
		}
		if wt.Script != nil && task.Script == nil {
			// Hook (h-conf, README "Running NoETL v2 playbooks"): the workbook entry's script block.
			sb, err := scriptConfig(wt.Script, sc)
			if err != nil {
				return fail(types.ErrKindTemplate, "workbook "+err.Error())
			}
			cfg["script"] = sb
		}
		if len(wt.Input) > 0 {
			v, err := template.RenderValue(wt.Input, sc)
			if err != nil {
				return fail(types.ErrKindTemplate, "workbook args: "+err.Error())
			}
			for k, x := range v.(map[string]any) {
				if _, set := args[k]; !set {
					args[k] = x
				}
			}
		}
	}
	tool := u.w.Tools[kind]
	if tool == nil {
		return fail(types.ErrKindConfig, fmt.Sprintf("task kind %q is not available in this engine", kind))
	}
	if u.rec != nil {
		if err := sentScript(cfg, u.rec.Files); err != nil {
			return fail(types.ErrKindConfig, err.Error())
		}
	}
	if canon, probs := toolspec.Canonicalize(kind, cfg); len(probs) == 0 {
		// NoETL's spellings (credential: for auth, sql: for command, ...)
		// under the kind's canonical keys: applyAuth and defaultConnection
		// read those; the tool decodes the same spec.
		cfg = canon
	}
	if err := u.applyAuth(kind, cfg); err != nil {
		return fail(types.ErrKindConfig, err.Error())
	}
	if kind == "postgres" {
		u.defaultConnection(cfg, args)
	}
	if kind == "http" {
		addIdempotencyKey(cfg, u.idempotencyKey())
	}
	if len(u.cmd.SpecPatch) > 0 && u.cur.TaskIndex == u.cmd.TaskIndex && u.cur.Jumps == u.cmd.Jumps {
		// A DLQ replay's corrections of the failed task (shared/dlq).
		for k, v := range u.cmd.SpecPatch {
			cfg[k] = v
		}
	}
	u.lastSpec = cfg
	timeout := task.TimeoutS
	if timeout <= 0 {
		timeout = u.w.ToolTimeout.Seconds()
		if u.w.SinkTimeout > 0 && engine.IsSink(u.pb, task, kind) {
			timeout = u.w.SinkTimeout.Seconds()
		}
	}
	if budget := u.itemBudget(); budget > 0 && u.cmd.Iteration != nil {
		// The iteration's budget caps every task's timeout; once spent,
		// the task times out at once.
		left := budget - u.w.now().Sub(u.cmd.Started)
		if left <= 0 {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindTimeout,
				Message: fmt.Sprintf("step %s task %s: loop item budget of %s spent", u.step.Name, task.Name, budget)}}
		}
		if timeout <= 0 || left.Seconds() < timeout {
			timeout = left.Seconds()
		}
	}
	tctx := ctx
	if timeout > 0 {
		// The tool's own timeout plus a grace period: a tool that ignores
		// its timeout is stopped here, and its outcome is a timeout.
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second))+2*time.Second)
		defer cancel()
	}
	// A task whose result may be re-derived records its rendered inputs
	// in its attempt's event (`noetl results repair`, shared/operations/gc).
	u.inputs = gc.RecordInputs(kind, cloneMap(cfg), cloneMap(args))
	// A tool that produces a table streams it through a sink into the
	// results tier instead of building it whole (lazy.go).
	out := tool.Run(u.withSinks(tctx, task), tools.Request{
		ExecutionID: u.cmd.ExecutionID, Step: u.step.Name, Task: task.Name, Attempt: u.cur.Attempt,
		Args: args, Config: cfg, TimeoutS: timeout,
		Context: u.taskContext(task), // hook (h-conf, README "Running NoETL v2 playbooks"): python's `context` (taskio.go)
		Barrier: barrier, BarrierMAC: u.w.barrierMAC(barrier),
	})
	if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && (out.Error == nil || out.Error.Kind != types.ErrKindTimeout) {
		out = types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindTimeout, Retryable: true,
			Message: fmt.Sprintf("step %s task %s: timed out after %gs", u.step.Name, task.Name, timeout)}}
	}
	return out
}

// idempotencyKey is the unit's idempotency key (NoETL observability spec §8.4):
// {execution_id}:{step}[:{iteration}], the same for every attempt of the
// unit, so a receiver can recognise a retried request.
func (u *unit) idempotencyKey() string {
	k := u.cmd.ExecutionID + ":" + u.cmd.Step
	if u.cmd.Iteration != nil {
		k += ":" + itoa(*u.cmd.Iteration)
	}
	return k
}

// addIdempotencyKey sends the key as the Idempotency-Key header of an http
// request that is not a GET or HEAD, unless the task sets the header.
func addIdempotencyKey(cfg map[string]any, key string) {
	m, _ := cfg["method"].(string)
	switch strings.ToUpper(strings.TrimSpace(m)) {
	case "", "GET", "HEAD":
		return
	}
	h, _ := cfg["headers"].(map[string]any)
	if h == nil {
		h = map[string]any{}
	}
	for k := range h {
		if strings.EqualFold(k, "Idempotency-Key") {
			return
		}
	}
	h["Idempotency-Key"] = key
	cfg["headers"] = h
}

type failFunc func(kind types.ErrorKind, msg string) types.Outcome

// render renders a task's merged args (step args under task args) and its
// config; bad is the error outcome of a template failure.
func (u *unit) render(task *dsl.Task) (args, cfg map[string]any, fail failFunc, bad *types.Outcome) {
	sc := u.taskScope()
	fail = func(kind types.ErrorKind, msg string) types.Outcome {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: kind, Message: fmt.Sprintf("step %s task %s: %s", u.step.Name, task.Name, msg)}}
	}
	ret := func(kind types.ErrorKind, msg string) (map[string]any, map[string]any, failFunc, *types.Outcome) {
		o := fail(kind, msg)
		return nil, nil, fail, &o
	}
	args = map[string]any{}
	if len(u.step.Input) > 0 {
		v, err := template.RenderValue(u.step.Input, sc)
		if err != nil {
			return ret(types.ErrKindTemplate, "step args: "+err.Error())
		}
		for k, x := range v.(map[string]any) {
			args[k] = x
		}
	}
	if len(task.Input) > 0 {
		v, err := template.RenderValue(task.Input, sc)
		if err != nil {
			return ret(types.ErrKindTemplate, "args: "+err.Error())
		}
		for k, x := range v.(map[string]any) {
			args[k] = x
		}
	}
	cfg = map[string]any{}
	for k, v := range task.Config {
		if k == "code" {
			cfg[k] = u.code(task, v, sc)
			continue
		}
		if unrendered[k] {
			cfg[k] = v
			continue
		}
		r, err := template.RenderValue(v, sc)
		if err != nil {
			return ret(types.ErrKindTemplate, k+": "+err.Error())
		}
		cfg[k] = r
	}
	if task.Script != nil {
		// Hook (h-conf, README "Running NoETL v2 playbooks"): the script: block (taskio.go).
		sb, err := scriptConfig(task.Script, sc)
		if err != nil {
			return ret(types.ErrKindTemplate, err.Error())
		}
		cfg["script"] = sb
	}
	return args, cfg, fail, nil
}

// code is renderCode with a rendering failure logged (the code then runs
// as written).
func (u *unit) code(task *dsl.Task, v any, sc template.Scope) any {
	out, err := renderCode(v, sc)
	if err != nil {
		u.log.Info("python code kept as written: it does not render as a template", "task", task.Name, "error", err.Error())
	}
	return out
}

// defaultConnection gives a postgres task without connection settings
// (cfg under its canonical keys: connection, auth, host, database, user)
// the workload's pg_dsn (DSL dialect), else the deployment's NOETL_PG_DSN
// (Worker.PGDSN), if any.
func (u *unit) defaultConnection(cfg, args map[string]any) {
	for _, k := range []string{"connection", "auth", "host", "database", "user"} {
		if cfg[k] != nil {
			return
		}
	}
	if dsn, ok := u.st.Workload["pg_dsn"].(string); ok && dsn != "" {
		cfg["connection"] = dsn
		return
	}
	if u.w.PGDSN != "" {
		cfg["connection"] = u.w.PGDSN
	}
}

// applyAuth resolves `auth: <keychain name>` (NoETL DSL spec "Document": keychain
// entries used by auth on postgres and http tasks): a postgres task gets
// the entry's connection fields, an http task the entry's headers under its
// own. A mapping `auth` is left as written.
func (u *unit) applyAuth(kind string, cfg map[string]any) error {
	name, ok := cfg["auth"].(string)
	if !ok || name == "" {
		return nil
	}
	entry, ok := u.kc[name].(map[string]any)
	if !ok {
		// Not a keychain entry: the kind resolves the name from the
		// credential store itself (NoETL playbooks name credentials in
		// auth: without declaring a keychain).
		return nil
	}
	switch kind {
	case "postgres":
		cfg["auth"] = entry
	case "http":
		h := map[string]any{}
		if eh, ok := entry["headers"].(map[string]any); ok {
			for k, v := range eh {
				h[k] = v
			}
		}
		if th, ok := cfg["headers"].(map[string]any); ok {
			for k, v := range th {
				h[k] = v
			}
		}
		cfg["headers"] = h
		delete(cfg, "auth")
	default:
		cfg["auth"] = entry
	}
	return nil
}

// addSecrets extends the unit's redactor with secret values read at run
// time (the secrets kind).
func (u *unit) addSecrets(vals []string) {
	kc := make(map[string]any, len(u.kc)+1)
	for k, v := range u.kc {
		kc[k] = v
	}
	m := map[string]any{}
	if prev, ok := u.kc["__task_secrets"].(map[string]any); ok {
		for k, v := range prev {
			m[k] = v
		}
	}
	for _, v := range vals {
		m[fmt.Sprintf("v%d", len(m))] = v
	}
	kc["__task_secrets"] = m
	u.kc = kc
	u.setRedactor(kc)
}

// itemBudget is the unit's loop item budget (loop.spec.item_timeout_s,
// else the worker's default; 0: none).
func (u *unit) itemBudget() time.Duration {
	if u.step.Loop == nil {
		return 0
	}
	if _, set := u.step.Loop.Spec["item_timeout_s"]; set {
		return engine.ItemBudget(u.step)
	}
	return u.w.LoopItemTimeout
}

// cloneMap is a deep copy of m (nil stays nil).
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c, _ := jsonx.Clone(m).(map[string]any)
	return c
}
