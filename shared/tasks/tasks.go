// Package tasks turns units of work into Cloud Tasks (ARCHITECTURE.md
// "dispatch"): one HTTP task per command, named by the command's
// idempotency key so a duplicate dispatch is refused by Cloud Tasks with
// AlreadyExists (treated as success), scheduled at the command's NotBefore
// (a durable timer: retry delays and backoff are never sleeps), and
// carrying the W3C trace context as a header.
package tasks

import (
	"context"
	"strings"

	"encoding/json"
	"fmt"
	"os"
	"time"

	"google.golang.org/api/iterator"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Creator turns units of work into Cloud Tasks: what the control plane
// needs from the task queue. Create returns created=false (and no error)
// when a task of the same name exists or existed recently (a duplicate:
// Cloud Tasks dedups names); Delete removes a pending task (absent is not
// an error).
type Creator interface {
	TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (created bool, err error)
	TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error
	// TaskDeleteExecution deletes every pending task of an execution (its
	// names start with types.TaskPrefix) from the queues and returns how
	// many it deleted.
	TaskDeleteExecution(ctx context.Context, executionID string) (int, error)
}

// Dispatcher creates Cloud Tasks for commands.
type Dispatcher struct {
	c *cloudtasks.Client
	// WorkQueue and TimersQueue are full queue paths; TimersQueue takes
	// commands with a NotBefore in the future.
	WorkQueue, TimersQueue string
	// TargetURL is the execute function's URL.
	TargetURL string
	// Deadline is the dispatch deadline of each task (default 10 min).
	Deadline time.Duration
	// ServiceAccount is the email of the service account whose OIDC token
	// Cloud Tasks attaches to every call of TargetURL (NOETL_TASKS_SERVICE_ACCOUNT;
	// "" attaches none); Audience is the token's audience
	// (NOETL_EXECUTE_AUDIENCE; "" means TargetURL). See oidc.go.
	ServiceAccount, Audience string
}

// Open connects to Cloud Tasks, or to the emulator when
// CLOUDTASKS_EMULATOR_HOST (host:port) is set.
func Open(ctx context.Context, workQueue, timersQueue, targetURL string) (*Dispatcher, error) {
	var opts []option.ClientOption
	if host := os.Getenv("CLOUDTASKS_EMULATOR_HOST"); host != "" {
		opts = append(opts, option.WithEndpoint(host), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	c, err := cloudtasks.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tasks: client: %w", err)
	}
	return &Dispatcher{c: c, WorkQueue: workQueue, TimersQueue: timersQueue, TargetURL: targetURL, Deadline: 10 * time.Minute}, nil
}

// Close closes the client.
func (d *Dispatcher) Close() error { return d.c.Close() }

// Client exposes the Cloud Tasks client (tests, tooling).
func (d *Dispatcher) Client() *cloudtasks.Client { return d.c }

// queueOf returns the queue of cmd: timers for a unit due later than
// half a second from now, work otherwise.
func (d *Dispatcher) queueOf(cmd types.Command, now time.Time) string {
	if cmd.NotBefore.After(now.Add(500 * time.Millisecond)) {
		return d.TimersQueue
	}
	return d.WorkQueue
}

// TaskDelete implements Creator. The task's queue is derived like
// TaskCreate's, so pass the same now (or a zero NotBefore).
func (d *Dispatcher) TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error {
	meter.For(ctx, cmd.ExecutionID).Add(meter.TasksDelete, 1)
	err := d.c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: d.queueOf(cmd, now) + "/tasks/" + cmd.TaskName()})
	if err != nil && status.Code(err) != codes.NotFound {
		return errs.Wrap(errs.CodeOf(err), err, "tasks: delete task")
	}
	return nil
}

// TaskCreate implements Creator: it creates the Cloud Task of cmd.
func (d *Dispatcher) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (created bool, err error) {
	if cmd.TraceParent == "" {
		// The unit continues the creator's trace (W3C context in a header).
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return false, fmt.Errorf("tasks: encode command: %w", err)
	}
	queue := d.queueOf(cmd, now)
	headers := map[string]string{"Content-Type": "application/json"}
	if cmd.TraceParent != "" {
		headers["traceparent"] = cmd.TraceParent
	}
	t := &cloudtaskspb.Task{
		Name: queue + "/tasks/" + cmd.TaskName(),
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url: d.TargetURL, HttpMethod: cloudtaskspb.HttpMethod_POST, Headers: headers, Body: body,
		}},
		DispatchDeadline: durationpb.New(d.Deadline),
	}
	if !cmd.NotBefore.IsZero() {
		t.ScheduleTime = timestamppb.New(cmd.NotBefore)
	}
	d.authorize(t) // OIDC token of execute's caller (oidc.go)
	meter.For(ctx, cmd.ExecutionID).Add(meter.TasksCreate, 1)
	_, err = d.c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: t})
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			return false, nil
		}
		return false, errs.Wrap(errs.CodeOf(err), err, "tasks: create task")
	}
	observeEnqueued(ctx, cmd, queue) // telemetry (observe.go)
	return true, nil
}

// TaskDeleteExecution implements Creator: it lists both queues and deletes
// the tasks whose names carry the execution's prefix (a canceled
// execution's pending units and timers).
func (d *Dispatcher) TaskDeleteExecution(ctx context.Context, executionID string) (int, error) {
	prefix := "/tasks/" + types.TaskPrefix(executionID) + "-"
	n := 0
	m := meter.For(ctx, executionID)
	for _, q := range []string{d.WorkQueue, d.TimersQueue} {
		it := d.c.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q, PageSize: 1000})
		m.Add(meter.TasksDelete, 0)
		for {
			t, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				return n, errs.Wrap(errs.CodeOf(err), err, "tasks: list tasks")
			}
			if !strings.Contains(t.Name, prefix) {
				continue
			}
			m.Add(meter.TasksDelete, 1)
			if err := d.c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: t.Name}); err != nil && status.Code(err) != codes.NotFound {
				return n, errs.Wrap(errs.CodeOf(err), err, "tasks: delete task")
			}
			n++
		}
	}
	return n, nil
}
