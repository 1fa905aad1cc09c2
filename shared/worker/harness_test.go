package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/types"
)

// fakeTool is a task kind whose behaviour is a function of the request
// and of how many times the task (by name) ran before; it records every
// request.
type fakeTool struct {
	run func(ctx context.Context, req tools.Request, n int) types.Outcome

	mu   sync.Mutex
	reqs []tools.Request
	runs map[string]int
}

func (f *fakeTool) Run(ctx context.Context, req tools.Request) types.Outcome {
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[string]int{}
	}
	f.runs[req.Task]++
	n := f.runs[req.Task]
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.run == nil {
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"task": req.Task, "n": int64(n)}}
	}
	return f.run(ctx, req, n)
}

// calls returns how many times task ran ("" = every task).
func (f *fakeTool) calls(task string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if task == "" {
		return len(f.reqs)
	}
	return f.runs[task]
}

func (f *fakeTool) requests() []tools.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tools.Request(nil), f.reqs...)
}

func ok(req tools.Request, n int) types.Outcome {
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"task": req.Task, "n": int64(n)}}
}

// gate blocks a tool until opened, and reports when the tool entered it.
type gate struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), open: make(chan struct{})} }

func (g *gate) wait(ctx context.Context) {
	g.entered <- struct{}{}
	select {
	case <-g.open:
	case <-ctx.Done():
	}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool was never entered")
	}
}

// newWorker returns a worker of the env's instance (its Control) running
// python and http tasks with the given fakes (nil: a plain fakeTool).
func newWorker(env *controltest.Env, python, http tools.Tool) *Worker {
	if python == nil {
		python = &fakeTool{}
	}
	if http == nil {
		http = &fakeTool{}
	}
	return &Worker{Control: env.Control, Store: env.Control.Store, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now, ContinueDefer: 16,
		Tools: tools.Registry{"noop": tools.Adapt(noop.New()), "python": python, "http": http}}
}

// otherInstance returns a worker of a second function instance (its own
// Control and caches) over the same store, bus and queue.
func otherInstance(env *controltest.Env, w *Worker) *Worker {
	c := &control.Control{Store: env.Control.Store, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "execute", Log: env.Log}
	return &Worker{Control: c, Store: c.Store, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now, Tools: w.Tools, ContinueDefer: w.ContinueDefer}
}

func start(t *testing.T, env *controltest.Env, id, src string, wl map[string]any) {
	t.Helper()
	if err := env.Launch(context.Background(), id, "", src, wl); err != nil {
		t.Fatalf("launch: %v", err)
	}
}

func isUnit(c types.Command) bool { return c.Kind == types.CmdRunStep || c.Kind == "" }

// take delivers the next due unit (not a watchdog) and moves the clock to
// its schedule time.
func take(t *testing.T, env *controltest.Env) types.Command {
	t.Helper()
	cmd, ok := env.Tasks.Take(isUnit)
	if !ok {
		t.Fatal("no unit pending")
	}
	env.Clock.Set(cmd.NotBefore)
	return cmd
}

// drain delivers units (never watchdogs) until none is pending, each at
// its schedule time, and fails on any delivery error.
func drain(t *testing.T, env *controltest.Env, w *Worker) {
	t.Helper()
	for range 500 {
		cmd, ok := env.Tasks.Take(isUnit)
		if !ok {
			return
		}
		env.Clock.Set(cmd.NotBefore)
		if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatalf("delivery of %s (task %d attempt %d): %v", cmd.UnitKey(), cmd.TaskIndex, cmd.Attempt, err)
		}
	}
	t.Fatal("units kept coming")
}

func status(t *testing.T, env *controltest.Env, id string) *engine.State {
	t.Helper()
	rec := env.State(context.Background(), id)
	if rec == nil {
		t.Fatalf("execution %s not readable", id)
	}
	return rec.State
}

// checkCausal checks the Lamport clocks of an execution's log: within a
// batch events are in causal order (increasing clocks); every event of a
// step run comes after the step.scheduled that started it; the log read
// back starts with the request and ends with playbook.finished.
func checkCausal(t *testing.T, env *controltest.Env, id string) {
	t.Helper()
	for _, b := range env.Bus.Batches() {
		if b.ExecutionID != id {
			continue
		}
		for i := 1; i < len(b.Events); i++ {
			if b.Events[i].Clock <= b.Events[i-1].Clock {
				t.Fatalf("batch %s: %s at %d after %s at %d", b.ID, b.Events[i].EventType, b.Events[i].Clock, b.Events[i-1].EventType, b.Events[i-1].Clock)
			}
		}
	}
	events := env.Bus.Events(id)
	sched := map[string]int64{}
	for _, e := range events {
		if e.EventType == types.EvStepScheduled {
			sched[fmt.Sprint(e.Step, "#", e.StepRun)] = e.Clock
		}
	}
	for _, e := range events {
		s, ok := sched[fmt.Sprint(e.Step, "#", e.StepRun)]
		if e.Source == Source && e.Step != "" && (!ok || e.Clock <= s) {
			t.Fatalf("%s of %s run %d at clock %d; its step.scheduled at %d (found %v)", e.EventType, e.Step, e.StepRun, e.Clock, s, ok)
		}
	}
	log := env.Bus.Log(id)
	if log[0].EventType != types.EvExecutionRequested || log[len(log)-1].EventType != types.EvPlaybookFinished {
		t.Fatalf("log runs from %s to %s", log[0].EventType, log[len(log)-1].EventType)
	}
	if c := env.Bus.Conflicts(); len(c) > 0 {
		t.Fatalf("events published twice with different contents: %v", c)
	}
}

// eventsOf returns the execution's distinct events of one type.
func eventsOf(env *controltest.Env, id string, typ types.EventType) []types.Event {
	return env.Bus.EventsOf(id, typ)
}
