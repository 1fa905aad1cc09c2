// Package cloudtasks is the Google Cloud Tasks driver of tasks.Creator
// (the contract in shared/tasks, in the manner of river's riverpgxv5 beside
// riverdriver): one HTTP task per command, named by the command's
// idempotency key so a duplicate dispatch is refused by Cloud Tasks with
// AlreadyExists (treated as success), scheduled at the command's NotBefore
// (a durable timer: retry delays and backoff are never sleeps), and
// carrying the W3C trace context as a header. Every body is signed
// (shared/sign, header sign.Header) so that execute runs only units the
// engine produced; a body too large for a Cloud Task (tasks.MaxTaskBytes)
// is kept in the results tier and the task carries a signed reference to
// it (tasks.RefCommand).
package cloudtasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	ctapi "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Dispatcher creates Cloud Tasks for commands (tasks.Creator).
type Dispatcher struct {
	c *ctapi.Client
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
	// Signer signs every body (header sign.Header); nil creates unsigned
	// tasks, which execute refuses.
	Signer *sign.Signer
	// Bodies keeps bodies too large for a Cloud Task (MaxTaskBytes); nil
	// makes such a command fail with an error naming the limit.
	Bodies tasks.BodyStore
}

// Open connects to Cloud Tasks, or to the emulator when
// CLOUDTASKS_EMULATOR_HOST (host:port) is set.
func Open(ctx context.Context, workQueue, timersQueue, targetURL string) (*Dispatcher, error) {
	var opts []option.ClientOption
	if host := os.Getenv("CLOUDTASKS_EMULATOR_HOST"); host != "" {
		opts = append(opts, option.WithEndpoint(host), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	c, err := ctapi.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tasks: client: %w", err)
	}
	return &Dispatcher{c: c, WorkQueue: workQueue, TimersQueue: timersQueue, TargetURL: targetURL, Deadline: 10 * time.Minute}, nil
}

// Close closes the client.
func (d *Dispatcher) Close() error { return d.c.Close() }

// Client exposes the Cloud Tasks client (tests, tooling).
func (d *Dispatcher) Client() *ctapi.Client { return d.c }

// queueOf returns the queue of cmd: timers for a unit due later than
// half a second from now, work otherwise.
func (d *Dispatcher) queueOf(cmd types.Command, now time.Time) string {
	if cmd.NotBefore.After(now.Add(500 * time.Millisecond)) {
		return d.TimersQueue
	}
	return d.WorkQueue
}

// queueFor returns the queue cmd's task goes to, the same on every
// dispatch of the command: queueOf at the time the command was made (its
// Clock, the producing transition's hybrid clock in microseconds), or at
// now for a command without a clock. Cloud Tasks dedups names within a
// queue only: a queue chosen by the caller's now sent a re-dispatch of a
// delayed unit (an outbox replayed, a commands message redelivered, after
// its NotBefore) to the other queue, where it ran a second time.
func (d *Dispatcher) queueFor(cmd types.Command, now time.Time) string {
	if cmd.Clock > 0 {
		now = time.UnixMicro(cmd.Clock)
	}
	return d.queueOf(cmd, now)
}

// TaskDelete implements tasks.Creator. The task is looked for in the queue
// TaskCreate chose for it, then in the other one (a task is in one
// queue; deleting one that is in neither is no error).
func (d *Dispatcher) TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error {
	first := d.queueFor(cmd, now)
	queues := []string{first}
	if other := d.WorkQueue; other != first {
		queues = append(queues, other)
	} else if d.TimersQueue != first {
		queues = append(queues, d.TimersQueue)
	}
	m := meter.For(ctx, cmd.ExecutionID)
	for _, q := range queues {
		m.Add(meter.TasksDelete, 1)
		err := d.c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: q + "/tasks/" + cmd.TaskName()})
		if err == nil {
			return nil
		}
		if status.Code(err) != codes.NotFound {
			return errs.Wrap(errs.CodeOf(err), err, "tasks: delete task")
		}
	}
	return nil
}

// TaskCreate implements tasks.Creator: it creates the Cloud Task of cmd (body:
// Body) in the queue queueFor chooses.
func (d *Dispatcher) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (created bool, err error) {
	body, err := tasks.Body(ctx, cmd)
	if err != nil {
		return false, err
	}
	if cmd.TraceParent == "" {
		cmd.TraceParent = telemetry.TraceParent(ctx) // the task's traceparent header
	}
	queue := d.queueFor(cmd, now)
	t := d.task(queue, cmd, body)
	if n := proto.Size(t); n > tasks.MaxTaskBytes {
		// Too large for Cloud Tasks: the body goes to the results tier and
		// the task carries a signed reference with the body's digest.
		if d.Bodies == nil {
			return false, errs.New(errs.InvalidArgument, "tasks: the unit of step %s is %d bytes, over Cloud Tasks' 100 KB task limit (%d bytes), and no results tier is configured to hold it", cmd.Step, n, tasks.MaxTaskBytes)
		}
		ref := tasks.RefCommand(cmd, body)
		if err := d.Bodies.Put(ctx, ref.BodyRef.Key, body, "application/json"); err != nil {
			return false, fmt.Errorf("tasks: store the body of a large unit: %w", err)
		}
		small, err := json.Marshal(ref)
		if err != nil {
			return false, fmt.Errorf("tasks: encode command reference: %w", err)
		}
		t = d.task(queue, cmd, small)
	}
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

// task builds the Cloud Task of cmd with body (signed).
func (d *Dispatcher) task(queue string, cmd types.Command, body []byte) *cloudtaskspb.Task {
	headers := map[string]string{"Content-Type": "application/json"}
	if cmd.TraceParent != "" {
		headers["traceparent"] = cmd.TraceParent
	}
	if sig := d.Signer.Sign(sign.Command, body); sig != "" {
		headers[sign.Header] = sig
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
	return t
}

// TaskDeleteExecution implements tasks.Creator: it lists both queues and deletes
// the tasks whose names carry the execution's prefix (a canceled
// execution's pending units and timers), but its watchdogs.
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
			if !strings.Contains(t.Name, prefix) || types.IsWatchdog(t.Name) {
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
