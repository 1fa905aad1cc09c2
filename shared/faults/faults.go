// Package faults injects failures into the functions at named points, to
// prove that work is never lost nor done twice (README "Resilience", the fault-injection
// soak): a point can crash the process (as an instance dying mid-handler
// would) or fail the handler with an error. It is off unless
// NOETL_FAULTS is set, which only the local stack does (scripts/soak);
// deployments never set it.
//
// NOETL_FAULTS is a comma-separated list of point=action:probability, e.g.
//
//	execute.after_tool=crash:0.02,route.before_commit=error:0.05
//
// with NOETL_FAULTS_SEED making the choices repeatable. Actions: crash (the
// process exits with ExitCode at once, without answering), error (the
// handler fails with a transient error). Counts of injected faults are
// logged with event "fault_injected" and kept in Counts.
package faults

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Points where the functions call Inject.
const (
	// ExecuteStart: a unit was delivered, nothing done yet.
	ExecuteStart = "execute.start"
	// ExecuteAfterLease: a unit's watchdog is armed and its lease taken,
	// nothing run (README "The soak": a holder that dies holding its lease; its
	// task's retries find the lease held, its watchdog finishes the unit).
	ExecuteAfterLease = "execute.after_lease"
	// ExecuteAfterTool: a side-effecting task's tool returned (its side
	// effect happened) and its outcome was recorded (the side-effect
	// barrier; an attempt that ends its unit, whose end's commit carries
	// its outcome, is recorded apart when this point fires); the unit has
	// not ended and the delivery is not acked.
	ExecuteAfterTool = "execute.after_tool"
	// ExecuteAfterIterationEnd: a loop iteration's end is recorded, what
	// follows it (the lane's next iteration, the loop's completion) is
	// not done (README "The soak": a later attempt of its task does it; when none is
	// left — a last attempt, or attempts spent while it ran — its guard or
	// the holder's watchdog does).
	ExecuteAfterIterationEnd = "execute.after_iteration_end"
	// ExecuteBeforeCommit: the unit ended, its transition is not committed.
	ExecuteBeforeCommit = "execute.before_commit"
	// ExecuteAfterCommit: the transition is committed, its outbox not
	// flushed (next units not created, events not published).
	ExecuteAfterCommit = "execute.after_commit"
	// ExecuteBeforeContinue: a step run's end committed and released its
	// next unit to this invocation (no Cloud Task of it yet), the unit not
	// run: its safety net (created now, or by the replay of the outbox
	// after a crash) delivers it.
	ExecuteBeforeContinue = "execute.before_continue"
	// ExecuteAfterContinue: the continued unit ran in this invocation and
	// the chain stops there: the unit it handed back gets its safety net
	// (created now, or by the replays of the outboxes after a crash).
	ExecuteAfterContinue = "execute.after_continue"
	// RouteBeforeCommit / RouteAfterCommit: around route's checkpoint.
	RouteBeforeCommit = "route.before_commit"
	RouteAfterCommit  = "route.after_commit"
	// MaterializeBeforeWrite: a batch arrived, not projected.
	MaterializeBeforeWrite = "materialize.before_write"
	// ExecuteAfterDeadLetter: a unit's last attempt filed it in the DLQ
	// (entry and park committed), the unit.dead_lettered event is not
	// published and Cloud Tasks has no answer (README "The soak": the filing must
	// stand on its own).
	ExecuteAfterDeadLetter = "execute.after_dead_letter"
	// APIBeforeCommit / APIAfterCommit: around the api's checkpoint of a
	// cancellation (after: its outbox — step.canceled, playbook.finished —
	// not flushed, its cleanup not done; README "The soak": route finishes it).
	APIBeforeCommit = "api.before_commit"
	APIAfterCommit  = "api.after_commit"
	// DLQReplayAfterDispatch: a DLQ replay created the unit's task, the
	// entry is not marked replayed (README "The soak": a retry of the replay
	// completes it).
	DLQReplayAfterDispatch = "dlq.replay.after_dispatch"
	// DLQDiscardAfterFail: a DLQ discard failed the unit's step run (or
	// iteration), the entry is not marked discarded.
	DLQDiscardAfterFail = "dlq.discard.after_fail"
)

// Points lists every point above (the soak counts each one it injects).
var Points = []string{ExecuteStart, ExecuteAfterLease, ExecuteAfterTool, ExecuteAfterIterationEnd, ExecuteBeforeCommit, ExecuteAfterCommit, ExecuteAfterDeadLetter,
	ExecuteBeforeContinue, ExecuteAfterContinue,
	RouteBeforeCommit, RouteAfterCommit, APIBeforeCommit, APIAfterCommit, MaterializeBeforeWrite,
	DLQReplayAfterDispatch, DLQDiscardAfterFail}

// ExitCode is the exit status of an injected crash (the stack's
// supervisor restarts the functions host at once after it).
const ExitCode = 86

// Env and SeedEnv name the variables.
const (
	Env     = "NOETL_FAULTS"
	SeedEnv = "NOETL_FAULTS_SEED"
)

type rule struct {
	action string
	p      float64
}

var (
	mu     sync.Mutex
	rules  map[string]rule
	rng    *rand.Rand
	counts = map[string]int{}
	loaded bool
	log    *slog.Logger // nil: slog.Default() at the time of logging
	exit   = os.Exit
	script func(point, executionID, step string) string
)

// Crashed is the panic value of a crash injected under SetScript: the
// handler stops there, as the process would, and the test that replays
// the schedule recovers it (the unit's delivery got no answer).
type Crashed struct{ Point string }

// SetScript replaces the random draws of Inject and InjectFor with fn (a
// fault schedule replayed by a test, README "The soak"): fn is asked at every
// point with the execution and the step (InjectFor; "" from Inject) and
// returns the action to inject there —
// "crash", "error" or "" for none. A crash panics with Crashed instead of
// exiting. It returns the function that restores the previous behaviour
// (tests defer it; the script is process-wide, so such tests must not run
// in parallel).
func SetScript(fn func(point, executionID, step string) string) (restore func()) {
	mu.Lock()
	prev := script
	script = fn
	mu.Unlock()
	return func() {
		mu.Lock()
		script = prev
		mu.Unlock()
	}
}

// scripted draws from the script when one is set (ok=false otherwise;
// f nil: nothing fires).
func scripted(point, executionID, step string) (ok bool, f *Fault) {
	mu.Lock()
	fn := script
	mu.Unlock()
	if fn == nil {
		return false, nil
	}
	action := fn(point, executionID, step)
	if action == "" {
		return true, nil
	}
	return true, &Fault{point: point, executionID: executionID, action: action, scope: "script"}
}

// Fault is a fault drawn at a point and not yet injected (Draw, DrawFor):
// a caller that must finish something before the point's state holds
// (execute.after_tool's recorded outcome) draws first, finishes it only
// when a fault fires, then injects.
type Fault struct {
	point, executionID, action string
	scope                      string // "script", "workload", "" (NOETL_FAULTS)
}

// Inject carries the fault out: a crash exits the process with ExitCode
// (under SetScript it panics with Crashed), an error returns Injected. It
// is counted (Counts) and logged with event "fault_injected". A nil Fault
// injects nothing and returns nil.
func (f *Fault) Inject() error {
	if f == nil {
		return nil
	}
	mu.Lock()
	counts[f.point+"."+f.action]++
	l := logger()
	mu.Unlock()
	attrs := []any{"event", "fault_injected", "point", f.point, "action", f.action, "execution_id", f.executionID}
	if f.scope != "" {
		attrs = append(attrs, "scope", f.scope)
	}
	l.Warn("fault injected", attrs...)
	if f.action == "crash" {
		if f.scope == "script" {
			panic(Crashed{Point: f.point})
		}
		exit(ExitCode)
	}
	return Injected{Point: f.point}
}

// Parse parses a NOETL_FAULTS value.
func Parse(s string) (map[string]rule, error) {
	out := map[string]rule{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		point, spec, ok := strings.Cut(part, "=")
		action, ps, ok2 := strings.Cut(spec, ":")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%s: %q is not point=action:probability", Env, part)
		}
		p, err := strconv.ParseFloat(ps, 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("%s: %q: probability must be between 0 and 1", Env, part)
		}
		if action != "crash" && action != "error" {
			return nil, fmt.Errorf("%s: %q: action must be crash or error", Env, part)
		}
		out[point] = rule{action: action, p: p}
	}
	return out, nil
}

func load() {
	if loaded {
		return
	}
	loaded = true
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	r, err := Parse(v)
	if err != nil {
		logger().Error("fault injection disabled: bad configuration", "error", err.Error())
		return
	}
	seed, _ := strconv.ParseUint(os.Getenv(SeedEnv), 10, 64)
	if seed == 0 {
		seed = rand.Uint64()
	}
	// Each process start draws differently (a restarted host must not
	// repeat the same crash at the same place forever).
	seed ^= uint64(os.Getpid()) * 0x9e3779b97f4a7c15
	rules, rng = r, rand.New(rand.NewPCG(seed, seed>>1|1))
	logger().Warn("fault injection enabled", "faults", v)
}

// logger is the logger set by SetLogger, else the process's default (read
// when logging, so that a default installed after this package's init —
// the functions' JSON logger — is used). Callers hold mu or run in load.
func logger() *slog.Logger {
	if log != nil {
		return log
	}
	return slog.Default()
}

// SetLogger sets the logger of injected faults (nil: slog.Default()).
func SetLogger(l *slog.Logger) {
	mu.Lock()
	log = l
	mu.Unlock()
}

// Enabled reports whether any fault is configured.
func Enabled() bool {
	mu.Lock()
	defer mu.Unlock()
	load()
	return len(rules) > 0
}

// Injected is the error of an injected error fault.
type Injected struct{ Point string }

// Error implements error.
func (e Injected) Error() string { return "injected fault at " + e.Point }

// Inject draws at point: it crashes the process, returns an Injected
// error, or returns nil (the usual case, and always when disabled).
func Inject(point, executionID string) error {
	return Draw(point, executionID).Inject()
}

// Draw draws at point as Inject does, without injecting: nil when nothing
// fires (always when disabled), else the fault for the caller's Inject.
func Draw(point, executionID string) *Fault {
	if ok, f := scripted(point, executionID, ""); ok {
		return f
	}
	mu.Lock()
	defer mu.Unlock()
	load()
	r, ok := rules[point]
	if !ok || rng.Float64() >= r.p {
		return nil
	}
	return &Fault{point: point, executionID: executionID, action: r.action}
}

// Counts returns the faults injected by this process, by "point.action".
func Counts() map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(counts))
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = counts[k]
	}
	return out
}

// WorkloadKey is the workload entry through which a test targets faults at
// one execution (honoured only when NOETL_FAULTS_WORKLOAD=1, which only the
// local stack sets): a mapping point → "action:probability", applied to
// the execution's units except replayed ones — a DLQ replay and the units
// it continues in (types.Command.ReplayOf) — so that a replay can succeed.
const WorkloadKey = "_noetl_faults"

// WorkloadEnv enables WorkloadKey.
const WorkloadEnv = "NOETL_FAULTS_WORKLOAD"

// InjectFor is Inject plus the execution's own faults (WorkloadKey) when
// enabled; a key "point@step" limits a fault to one step's units; replay
// reports a replayed unit (exempt from workload faults).
func InjectFor(point, executionID, step string, workload map[string]any, replay bool) error {
	return DrawFor(point, executionID, step, workload, replay).Inject()
}

// DrawFor draws at point as InjectFor does, without injecting (Draw).
func DrawFor(point, executionID, step string, workload map[string]any, replay bool) *Fault {
	if ok, f := scripted(point, executionID, step); ok {
		return f
	}
	if !replay && os.Getenv(WorkloadEnv) == "1" {
		if m, ok := workload[WorkloadKey].(map[string]any); ok {
			spec, ok := m[point].(string)
			if !ok {
				spec, ok = m[point+"@"+step].(string)
			}
			if ok {
				if r, err := Parse(point + "=" + spec); err == nil {
					rr := r[point]
					mu.Lock()
					if rng == nil {
						rng = rand.New(rand.NewPCG(rand.Uint64(), 1))
					}
					hit := rng.Float64() < rr.p
					mu.Unlock()
					if hit {
						return &Fault{point: point, executionID: executionID, action: rr.action, scope: "workload"}
					}
				}
			}
		}
	}
	return Draw(point, executionID)
}
