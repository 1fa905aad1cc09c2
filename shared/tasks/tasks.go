// Package tasks turns units of work into Cloud Tasks (README "Architecture"
// "dispatch"): one HTTP task per command, named by the command's
// idempotency key so a duplicate dispatch is refused by Cloud Tasks with
// AlreadyExists (treated as success), scheduled at the command's NotBefore
// (a durable timer: retry delays and backoff are never sleeps), and
// carrying the W3C trace context as a header. Every body is signed
// (shared/sign, header sign.Header) so that execute runs only units the
// engine produced; a body too large for a Cloud Task is kept in the
// results tier and the task carries a signed reference to it (BodyRef).
package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/api/iterator"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
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
	// names start with types.TaskPrefix) from the queues but its watchdogs
	// (types.IsWatchdog: they close the chains of units whose holders
	// died) and returns how many it deleted.
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
	// Signer signs every body (header sign.Header); nil creates unsigned
	// tasks, which execute refuses.
	Signer *sign.Signer
	// Bodies keeps bodies too large for a Cloud Task (MaxTaskBytes); nil
	// makes such a command fail with an error naming the limit.
	Bodies BodyStore
}

// MaxTaskBytes is the largest Cloud Task the dispatcher creates, in bytes
// of the serialized task (name, URL, headers, body): Cloud Tasks' 100 KB
// task size limit (CreateTask API reference; the emulator enforces it the
// same way). A command whose task would be larger is stored in Bodies and
// the task carries only its reference (BodyRef).
const MaxTaskBytes = 100 * 1024

// BodyStore is the byte store of large command bodies (the results tier:
// results.Store and results.Backend implement it). Put overwrites; Get
// returns the bytes last put at key.
type BodyStore interface {
	Put(ctx context.Context, key string, data []byte, contentType string) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// BodyKey is the results-tier object key of a command's offloaded body:
// bodies/<execution id>/<task name>.json (the bucket's lifecycle rule
// expires it with the execution's results).
func BodyKey(cmd types.Command) string {
	return "bodies/" + cmd.ExecutionID + "/" + cmd.TaskName() + ".json"
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

// TaskDelete implements Creator. The task is looked for in the queue
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

// Body returns the body of cmd's Cloud Task as TaskCreate sends it: the
// command continuing ctx's trace (TraceParent set from ctx when empty),
// JSON encoded, with the execution's secret values masked (the redactor of
// ctx, redact.WithRedactor: a secret never travels in a task body). The
// fakes of Creator build their bodies with it too.
func Body(ctx context.Context, cmd types.Command) ([]byte, error) {
	if cmd.TraceParent == "" {
		// The unit continues the creator's trace (W3C context in a header).
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "tasks: encode command")
	}
	return redact.FromContext(ctx).SecretsBytes(body), nil
}

// TaskCreate implements Creator: it creates the Cloud Task of cmd (body:
// Body) in the queue queueFor chooses.
func (d *Dispatcher) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (created bool, err error) {
	body, err := Body(ctx, cmd)
	if err != nil {
		return false, err
	}
	if cmd.TraceParent == "" {
		cmd.TraceParent = telemetry.TraceParent(ctx) // the task's traceparent header
	}
	queue := d.queueFor(cmd, now)
	t := d.task(queue, cmd, body)
	if n := proto.Size(t); n > MaxTaskBytes {
		// Too large for Cloud Tasks: the body goes to the results tier and
		// the task carries a signed reference with the body's digest.
		if d.Bodies == nil {
			return false, errs.New(errs.InvalidArgument, "tasks: the unit of step %s is %d bytes, over Cloud Tasks' 100 KB task limit (%d bytes), and no results tier is configured to hold it", cmd.Step, n, MaxTaskBytes)
		}
		ref := RefCommand(cmd, body)
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

// RefCommand returns the reference body of a command whose full body is
// stored at BodyKey(cmd): the fields its task name derives from (so
// TaskName is the same), its schedule and trace, and BodyRef with
// the body's SHA-256 and size. Signed like any body, it authenticates the
// stored bytes through their digest.
func RefCommand(cmd types.Command, body []byte) types.Command {
	sum := sha256.Sum256(body)
	return types.Command{
		ID: cmd.ID, Kind: cmd.Kind, ExecutionID: cmd.ExecutionID, Step: cmd.Step, StepRun: cmd.StepRun,
		Iteration: cmd.Iteration, TaskIndex: cmd.TaskIndex, Attempt: cmd.Attempt, Jumps: cmd.Jumps, NotBefore: cmd.NotBefore,
		StateVersion: cmd.StateVersion, Clock: cmd.Clock, TraceParent: cmd.TraceParent, ChildID: cmd.ChildID,
		Reclaim: cmd.Reclaim, Replay: cmd.Replay, HandOff: cmd.HandOff, Holder: cmd.Holder, Seq: cmd.Seq,
		BodyRef: &types.BodyRef{Key: BodyKey(cmd), SHA256: hex.EncodeToString(sum[:]), Bytes: len(body)},
	}
}

// LoadBody returns the full command of a reference body (cmd.BodyRef set)
// read from bs, after checking its SHA-256 and that it is the command the
// reference names (same id, execution and step); a command without
// BodyRef is returned as is. Errors: a missing store or object, or a
// digest or identity mismatch, are permanent (errs.InvalidArgument) — the
// unit can never run — except a store failure, which is returned as is
// (transient).
func LoadBody(ctx context.Context, bs BodyStore, cmd types.Command) (types.Command, error) {
	ref := cmd.BodyRef
	if ref == nil {
		return cmd, nil
	}
	if bs == nil {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's body is in the results tier (%s) but no results tier is configured", ref.Key)
	}
	if ref.Key != BodyKey(cmd) {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's body reference %q is not the unit's own key", ref.Key)
	}
	body, err := bs.Get(ctx, ref.Key)
	if err != nil {
		if errors.Is(err, results.ErrNotFound) {
			return cmd, errs.Wrap(errs.InvalidArgument, err, "tasks: the unit's stored body is gone")
		}
		return cmd, fmt.Errorf("tasks: load the unit's stored body: %w", err)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != ref.SHA256 || len(body) != ref.Bytes {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's stored body %s does not match its digest", ref.Key)
	}
	var full types.Command
	if err := jsonx.Unmarshal(body, &full); err != nil {
		return cmd, errs.Wrap(errs.InvalidArgument, err, "tasks: decode the unit's stored body")
	}
	if full.TaskName() != cmd.TaskName() || full.ID != cmd.ID || full.BodyRef != nil {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's stored body %s is another unit", ref.Key)
	}
	return full, nil
}

// TaskDeleteExecution implements Creator: it lists both queues and deletes
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
