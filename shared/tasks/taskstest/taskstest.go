// Package taskstest is the conformance suite of tasks.Creator (in the
// manner of google/go-cloud's drivertest and river's driver suite): the
// Cloud Tasks driver (cloudtasks.Dispatcher, on the Cloud Tasks emulator of
// emulators/cloudtasks) and the in-memory fake every engine test uses
// (controltest.Tasks) run the same cases through the interface and the
// tasks left pending, so the fake cannot drift from the driver.
//
// The contract (tasks.Creator):
//   - TaskCreate creates one task named cmd.TaskName() whose body is the
//     command as tasks.Body makes it (the creator's trace, the execution's
//     secrets masked), due at cmd.NotBefore (at once when zero); a command
//     of any size is accepted (a large body travels by reference).
//   - A name is created once: a second TaskCreate of the command — at any
//     later time, after the task was deleted, concurrently — answers
//     created=false and no error.
//   - TaskDelete removes a pending task; a task that is not there is no
//     error. TaskDeleteExecution removes every pending task of one
//     execution and counts them.
//   - A done context fails the call (Canceled or DeadlineExceeded) and
//     creates nothing.
package taskstest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Task is a pending task as the queue holds it.
type Task struct {
	// Name is the task's id (the last segment of its resource name).
	Name string
	// Cmd is its command as execute decodes it (the full command, for a
	// body kept in the results tier).
	Cmd types.Command
	// ScheduleTime is when it is due (zero, or the creation time, for a
	// command without NotBefore).
	ScheduleTime time.Time
}

// Harness is one task queue under test, empty when returned.
type Harness struct {
	Creator tasks.Creator
	// Pending returns the tasks created and neither delivered nor
	// deleted, in any order.
	Pending func(ctx context.Context) ([]Task, error)
}

const opTimeout = time.Minute

// Run runs the suite: newHarness is called once per case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, h Harness)
	}{
		{"CreateThenPending", testCreate},
		{"DuplicateNameNotCreated", testDuplicate},
		{"DuplicateAfterDeleteNotCreated", testDuplicateAfterDelete},
		{"DuplicateOfADelayedUnitLaterNotCreated", testDuplicateLater},
		{"ConcurrentCreatesOnce", testConcurrent},
		{"ScheduleTime", testSchedule},
		{"DeletePending", testDelete},
		{"DeleteMissingIsNoError", testDeleteMissing},
		{"DeleteExecution", testDeleteExecution},
		{"SecretsNeverInTheBody", testSecrets},
		{"TraceContext", testTrace},
		{"LargeUnit", testLarge},
		{"CanceledContext", testCanceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			defer cancel()
			c.fn(ctx, t, h)
		})
	}
}

var seq struct {
	sync.Mutex
	n int
}

// unit returns a run_step command of a fresh execution with generic
// values of every kind.
func unit(t *testing.T, step string) types.Command {
	seq.Lock()
	seq.n++
	n := seq.n
	seq.Unlock()
	id := fmt.Sprintf("taskstest-%d-%d", time.Now().UnixNano(), n)
	c := types.Command{Kind: types.CmdRunStep, ExecutionID: id, Step: step, StepRun: 1, Iteration: types.IntPtr(2), LoopTotal: 3,
		Item: map[string]any{"id": int64(7), "w": 0.5}, Args: map[string]any{"page": int64(2), "ids": []any{int64(1), []any{"a", nil}}},
		TaskIndex: 1, Attempt: 2, StateVersion: 4}
	c.ID = c.TaskName()
	return c
}

func pending(ctx context.Context, t *testing.T, h Harness) map[string]Task {
	t.Helper()
	ts, err := h.Pending(ctx)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	out := map[string]Task{}
	for _, tk := range ts {
		if _, dup := out[tk.Name]; dup {
			t.Fatalf("task %s pending twice", tk.Name)
		}
		out[tk.Name] = tk
	}
	return out
}

func create(ctx context.Context, t *testing.T, h Harness, cmd types.Command, now time.Time, want bool) {
	t.Helper()
	created, err := h.Creator.TaskCreate(ctx, cmd, now)
	if err != nil || created != want {
		t.Fatalf("TaskCreate(%s) = %v, %v; want %v, nil", cmd.TaskName(), created, err, want)
	}
}

// wire is cmd as execute decodes it.
func wire(t *testing.T, cmd types.Command) types.Command {
	t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var out types.Command
	if err := jsonx.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func testCreate(ctx context.Context, t *testing.T, h Harness) {
	cmd := unit(t, "fetch")
	create(ctx, t, h, cmd, time.Now(), true)
	p := pending(ctx, t, h)
	tk, ok := p[cmd.TaskName()]
	if !ok || len(p) != 1 {
		t.Fatalf("pending %v, want only %s", p, cmd.TaskName())
	}
	if !reflect.DeepEqual(tk.Cmd, wire(t, cmd)) {
		t.Fatalf("the task's command\n%+v\nwant\n%+v", tk.Cmd, wire(t, cmd))
	}
}

func testDuplicate(ctx context.Context, t *testing.T, h Harness) {
	cmd := unit(t, "fetch")
	create(ctx, t, h, cmd, time.Now(), true)
	create(ctx, t, h, cmd, time.Now(), false)
	if p := pending(ctx, t, h); len(p) != 1 {
		t.Fatalf("%d tasks pending after a duplicate create, want 1", len(p))
	}
}

func testDuplicateAfterDelete(ctx context.Context, t *testing.T, h Harness) {
	cmd := unit(t, "fetch")
	now := time.Now()
	create(ctx, t, h, cmd, now, true)
	if err := h.Creator.TaskDelete(ctx, cmd, now); err != nil {
		t.Fatalf("TaskDelete: %v", err)
	}
	create(ctx, t, h, cmd, now, false)
	if p := pending(ctx, t, h); len(p) != 0 {
		t.Fatalf("pending %v: a deleted name is not created again", p)
	}
}

// testDuplicateLater: a delayed unit (a retry with backoff) dispatched
// again after its NotBefore — an outbox replayed after a crash, a commands
// message redelivered — is the same task.
func testDuplicateLater(ctx context.Context, t *testing.T, h Harness) {
	t0 := time.Now().Truncate(time.Microsecond)
	cmd := unit(t, "retry")
	cmd.Clock = t0.UnixMicro()
	cmd.NotBefore = t0.Add(2 * time.Second)
	create(ctx, t, h, cmd, t0, true)
	create(ctx, t, h, cmd, t0.Add(5*time.Second), false)
	if p := pending(ctx, t, h); len(p) != 1 {
		t.Fatalf("%d tasks pending for one delayed unit dispatched twice, want 1", len(p))
	}
}

func testConcurrent(ctx context.Context, t *testing.T, h Harness) {
	cmd := unit(t, "fetch")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := h.Creator.TaskCreate(ctx, cmd, time.Now())
			if err != nil {
				t.Errorf("TaskCreate: %v", err)
			}
			if ok {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("%d of 8 concurrent creates created the task, want 1", created)
	}
}

func testSchedule(ctx context.Context, t *testing.T, h Harness) {
	now := time.Now()
	later := unit(t, "later")
	later.NotBefore = now.Add(time.Hour).Truncate(time.Microsecond).UTC()
	soon := unit(t, "soon")
	create(ctx, t, h, later, now, true)
	create(ctx, t, h, soon, now, true)
	p := pending(ctx, t, h)
	if got := p[later.TaskName()].ScheduleTime; !got.Equal(later.NotBefore) {
		t.Errorf("schedule time %v, want the command's NotBefore %v", got, later.NotBefore)
	}
	if got := p[soon.TaskName()].ScheduleTime; !got.IsZero() && got.After(time.Now().Add(time.Second)) {
		t.Errorf("schedule time %v of a command due at once", got)
	}
	if p[later.TaskName()].Cmd.NotBefore != later.NotBefore {
		t.Errorf("the command's NotBefore %v, want %v", p[later.TaskName()].Cmd.NotBefore, later.NotBefore)
	}
}

func testDelete(ctx context.Context, t *testing.T, h Harness) {
	now := time.Now()
	due := unit(t, "due")
	delayed := unit(t, "delayed")
	delayed.NotBefore = now.Add(time.Hour)
	delayed.Clock = now.UnixMicro()
	create(ctx, t, h, due, now, true)
	create(ctx, t, h, delayed, now, true)
	for _, c := range []types.Command{due, delayed} {
		if err := h.Creator.TaskDelete(ctx, c, now); err != nil {
			t.Fatalf("TaskDelete(%s): %v", c.Step, err)
		}
	}
	if p := pending(ctx, t, h); len(p) != 0 {
		t.Fatalf("pending %v after the deletes", p)
	}
}

func testDeleteMissing(ctx context.Context, t *testing.T, h Harness) {
	if err := h.Creator.TaskDelete(ctx, unit(t, "never"), time.Now()); err != nil {
		t.Fatalf("TaskDelete of a task never created: %v", err)
	}
}

func testDeleteExecution(ctx context.Context, t *testing.T, h Harness) {
	now := time.Now()
	a1, a2, other := unit(t, "a"), unit(t, "b"), unit(t, "c")
	a2.ExecutionID, a2.ID = a1.ExecutionID, ""
	a2.NotBefore, a2.Clock = now.Add(time.Hour), now.UnixMicro()
	for _, c := range []types.Command{a1, a2, other} {
		create(ctx, t, h, c, now, true)
	}
	n, err := h.Creator.TaskDeleteExecution(ctx, a1.ExecutionID)
	if err != nil || n != 2 {
		t.Fatalf("TaskDeleteExecution = %d, %v; want 2, nil", n, err)
	}
	p := pending(ctx, t, h)
	if _, ok := p[other.TaskName()]; !ok || len(p) != 1 {
		t.Fatalf("pending %v, want only the other execution's task", p)
	}
	if n, err := h.Creator.TaskDeleteExecution(ctx, a1.ExecutionID); err != nil || n != 0 {
		t.Fatalf("second TaskDeleteExecution = %d, %v; want 0, nil", n, err)
	}
}

func testSecrets(ctx context.Context, t *testing.T, h Harness) {
	const secret = "s3cr3t-pa55w0rd-value"
	cmd := unit(t, "load")
	cmd.Args["dsn"] = "postgres://u:" + secret + "@db/x"
	red := redact.New(map[string]any{"db": map[string]any{"password": secret}})
	create(redact.WithRedactor(ctx, red), t, h, cmd, time.Now(), true)
	tk := pending(ctx, t, h)[cmd.TaskName()]
	b, _ := json.Marshal(tk.Cmd)
	if strings.Contains(string(b), secret) || tk.Cmd.Args["dsn"] == nil {
		t.Fatalf("the task's command %s carries the execution's secret", b)
	}
}

func testTrace(ctx context.Context, t *testing.T, h Harness) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cmd := unit(t, "traced")
	create(telemetry.WithTraceParent(ctx, tp), t, h, cmd, time.Now(), true)
	if got := pending(ctx, t, h)[cmd.TaskName()].Cmd.TraceParent; got != tp {
		t.Fatalf("the task's trace parent %q, want the creator's %q", got, tp)
	}
}

func testLarge(ctx context.Context, t *testing.T, h Harness) {
	cmd := unit(t, "large")
	cmd.Args["blob"] = strings.Repeat("x", 300<<10) // over Cloud Tasks' 100 KB task limit
	create(ctx, t, h, cmd, time.Now(), true)
	tk, ok := pending(ctx, t, h)[cmd.TaskName()]
	if !ok || !reflect.DeepEqual(tk.Cmd, wire(t, cmd)) {
		t.Fatalf("the large unit's task (%v) does not give back its command", ok)
	}
}

func testCanceled(ctx context.Context, t *testing.T, h Harness) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	cmd := unit(t, "canceled")
	created, err := h.Creator.TaskCreate(cctx, cmd, time.Now())
	if created || !errs.Is(err, errs.Canceled) {
		t.Fatalf("TaskCreate with a canceled context = %v, %v (code %s); want false, Canceled", created, err, errs.CodeOf(err))
	}
	if p := pending(ctx, t, h); len(p) != 0 {
		t.Fatalf("pending %v after a canceled create", p)
	}
	if err := h.Creator.TaskDelete(cctx, cmd, time.Now()); !errs.Is(err, errs.Canceled) {
		t.Errorf("TaskDelete with a canceled context: %v", err)
	}
	if _, err := h.Creator.TaskDeleteExecution(cctx, cmd.ExecutionID); !errs.Is(err, errs.Canceled) {
		t.Errorf("TaskDeleteExecution with a canceled context: %v", err)
	}
}
