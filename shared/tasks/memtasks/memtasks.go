// Package memtasks is the in-memory driver of the Cloud Tasks contract
// (shared/tasks): Tasks keeps Cloud Tasks' name dedup and decodes each
// body as execute does, for in-process tests of the engine
// (shared/control/controltest wires it). taskstest holds it to the contract
// the Cloud Tasks driver (shared/tasks/cloudtasks) passes on the emulator.
package memtasks

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/types"
)

// Task is one Cloud Task of the fake queue.
type Task struct {
	Name string
	Cmd  types.Command
	// Taken reports the task was delivered (Tasks.Take); Deleted that it
	// was deleted before delivery.
	Taken, Deleted bool
}

// Tasks is an in-memory tasks.Creator with Cloud Tasks' name dedup: a
// second create of a name returns created=false, also after the first was
// delivered or deleted. Commands are stored as execute decodes the body
// the driver sends (tasks.Body: the creator's trace, secrets masked; then
// jsonx); a done context fails the call (Canceled, DeadlineExceeded).
// taskstest.Run holds it to the contract the driver passes on the Cloud
// Tasks emulator.
type Tasks struct {
	// FailCreate, when set, is called before a task is created; a non-nil
	// error fails the create (nothing is recorded).
	FailCreate func(types.Command) error

	mu       sync.Mutex
	tasks    []*Task
	byName   map[string]*Task
	calls    int
	delExecs []string
	deleted  []string
}

// roundTrip returns cmd as execute decodes the body of its Cloud Task.
func roundTrip(ctx context.Context, c types.Command) (types.Command, error) {
	raw, err := tasks.Body(ctx, c)
	if err != nil {
		return types.Command{}, err
	}
	var d types.Command
	if err := jsonx.Unmarshal(raw, &d); err != nil {
		return types.Command{}, fmt.Errorf("memtasks: decode command: %w", err)
	}
	return d, nil
}

// done fails a call made with a done context, as the Cloud Tasks client
// does.
func done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "memtasks: tasks")
	}
	return nil
}

// TaskCreate implements tasks.Creator.
func (t *Tasks) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (bool, error) {
	t.mu.Lock()
	t.calls++
	fail := t.FailCreate
	t.mu.Unlock()
	if fail != nil {
		if err := fail(cmd); err != nil {
			return false, err
		}
	}
	if err := done(ctx); err != nil {
		return false, err
	}
	d, err := roundTrip(ctx, cmd)
	if err != nil {
		return false, err
	}
	name := cmd.TaskName()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName = map[string]*Task{}
	}
	if _, ok := t.byName[name]; ok {
		return false, nil
	}
	tk := &Task{Name: name, Cmd: d}
	t.byName[name] = tk
	t.tasks = append(t.tasks, tk)
	return true, nil
}

// TaskDelete implements tasks.Creator.
func (t *Tasks) TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error {
	if err := done(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := cmd.TaskName()
	t.deleted = append(t.deleted, name)
	if tk := t.byName[name]; tk != nil && !tk.Taken {
		tk.Deleted = true
	}
	return nil
}

// TaskDeleteExecution implements tasks.Creator: it deletes the
// execution's tasks not yet delivered, but its watchdogs (as the
// Dispatcher does).
func (t *Tasks) TaskDeleteExecution(ctx context.Context, executionID string) (int, error) {
	if err := done(ctx); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delExecs = append(t.delExecs, executionID)
	prefix := types.TaskPrefix(executionID) + "-"
	n := 0
	for _, tk := range t.tasks {
		if !tk.Taken && !tk.Deleted && strings.HasPrefix(tk.Name, prefix) && !types.IsWatchdog(tk.Name) {
			tk.Deleted = true
			n++
		}
	}
	return n, nil
}

// Tasks returns a copy of every task created, in creation order.
func (t *Tasks) Tasks() []Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Task, len(t.tasks))
	for i, tk := range t.tasks {
		out[i] = *tk
	}
	return out
}

// Calls counts TaskCreate calls (failed and duplicate ones included).
func (t *Tasks) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// Created returns every created task's command, in creation order.
func (t *Tasks) Created() []types.Command {
	return t.list(func(*Task) bool { return true })
}

// Pending returns the commands of tasks neither delivered nor deleted.
func (t *Tasks) Pending() []types.Command {
	return t.list(func(tk *Task) bool { return !tk.Taken && !tk.Deleted })
}

func (t *Tasks) list(keep func(*Task) bool) []types.Command {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []types.Command
	for _, tk := range t.tasks {
		if keep(tk) {
			out = append(out, tk.Cmd)
		}
	}
	return out
}

// Take delivers the pending task that is due first (earliest NotBefore,
// then creation order) among those match accepts (nil: any); ok is false
// when none is pending.
func (t *Tasks) Take(match func(types.Command) bool) (cmd types.Command, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cands []*Task
	for _, tk := range t.tasks {
		if !tk.Taken && !tk.Deleted && (match == nil || match(tk.Cmd)) {
			cands = append(cands, tk)
		}
	}
	if len(cands) == 0 {
		return types.Command{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Cmd.NotBefore.Before(cands[j].Cmd.NotBefore) })
	cands[0].Taken = true
	return cands[0].Cmd, true
}

// DeletedExecutions returns the execution ids passed to
// TaskDeleteExecution, in call order.
func (t *Tasks) DeletedExecutions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.delExecs...)
}
