package cloudtasks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"

	ctemu "github.com/noetl/gcpengine/emulators/cloudtasks"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/types"
)

const loc = "projects/p/locations/us-central1"

// dispatcher serves the Cloud Tasks emulator in-process with one paused
// queue (nothing is dispatched) and returns a Dispatcher on it.
func dispatcher(t *testing.T) *Dispatcher {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ctemu.NewServer(ctemu.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go func() { _ = srv.Serve(lis) }()
	t.Setenv("CLOUDTASKS_EMULATOR_HOST", lis.Addr().String())
	ctx := context.Background()
	q := loc + "/queues/work"
	d, err := Open(ctx, q, q, "http://127.0.0.1:1/execute")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); srv.Stop() })
	if _, err := d.Client().CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: loc, Queue: &cloudtaskspb.Queue{Name: q}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client().PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
		t.Fatal(err)
	}
	d.Signer, _ = sign.Parse("tasks-test-key-0123456789abcdef0123456789")
	return d
}

func getTask(t *testing.T, d *Dispatcher, cmd types.Command) *cloudtaskspb.HttpRequest {
	t.Helper()
	tk, err := d.Client().GetTask(context.Background(), &cloudtaskspb.GetTaskRequest{Name: d.WorkQueue + "/tasks/" + cmd.TaskName(), ResponseView: cloudtaskspb.Task_FULL})
	if err != nil {
		t.Fatal(err)
	}
	return tk.GetHttpRequest()
}

func unit(argBytes int) types.Command {
	c := types.Command{Kind: types.CmdRunStep, ExecutionID: "e1", Step: "load", StepRun: 2, Iteration: types.IntPtr(3),
		TaskIndex: 1, Attempt: 2, Jumps: 1, Args: map[string]any{"blob": strings.Repeat("x", argBytes)}, StateVersion: 5}
	c.ID = c.TaskName()
	return c
}

// Every task body carries the engine's signature of exactly that body.
func TestTaskCreateSigns(t *testing.T) {
	d := dispatcher(t)
	cmd := unit(10)
	if created, err := d.TaskCreate(context.Background(), cmd, time.Now()); err != nil || !created {
		t.Fatalf("TaskCreate: %v %v", created, err)
	}
	hr := getTask(t, d, cmd)
	if err := d.Signer.Verify(sign.Command, hr.Body, hr.Headers[sign.Header]); err != nil {
		t.Fatalf("task body not signed: %v (headers %v)", err, hr.Headers)
	}
}

// A unit over Cloud Tasks' 100 KB limit is stored in the results tier and
// the task carries a small signed reference; LoadBody gives back the
// exact command, and refuses a stored body that was swapped.
func TestTaskCreateLargeBody(t *testing.T) {
	d := dispatcher(t)
	ctx := context.Background()
	cmd := unit(300 << 10)
	if _, err := d.TaskCreate(ctx, cmd, time.Now()); !errs.Permanent(err) || !strings.Contains(err.Error(), "100") {
		t.Fatalf("without a results tier a large unit must fail permanently naming the limit, got %v", err)
	}
	bodies := results.NewMemory() // the results tier's in-memory backend (resultstest.BackendSuite)
	d.Bodies = bodies
	if _, err := d.TaskCreate(ctx, cmd, time.Now()); err != nil {
		t.Fatalf("large unit: %v", err)
	}
	hr := getTask(t, d, cmd)
	if len(hr.Body) > 2048 {
		t.Fatalf("reference body is %d bytes", len(hr.Body))
	}
	if err := d.Signer.Verify(sign.Command, hr.Body, hr.Headers[sign.Header]); err != nil {
		t.Fatalf("reference body not signed: %v", err)
	}
	var ref types.Command
	if err := json.Unmarshal(hr.Body, &ref); err != nil || ref.BodyRef == nil || ref.Args != nil {
		t.Fatalf("reference body %s", hr.Body)
	}
	if ref.TaskName() != cmd.TaskName() {
		t.Fatal("the reference must name the same task")
	}
	full, err := tasks.LoadBody(ctx, bodies, ref)
	if err != nil {
		t.Fatal(err)
	}
	if full.Args["blob"] != cmd.Args["blob"] || full.TaskName() != cmd.TaskName() || full.BodyRef != nil {
		t.Fatal("loaded command differs")
	}
	// Tampering with the stored body (another unit, or edited bytes) is
	// refused permanently.
	other, _ := json.Marshal(unit(5))
	_ = bodies.Put(ctx, ref.BodyRef.Key, other, "")
	if _, err := tasks.LoadBody(ctx, bodies, ref); !errs.Permanent(err) {
		t.Errorf("swapped body: %v", err)
	}
	if _, err := tasks.LoadBody(ctx, results.NewMemory(), ref); !errs.Permanent(err) {
		t.Errorf("missing body: %v", err)
	}
	bad := ref
	bad.BodyRef = &types.BodyRef{Key: "bodies/e0/other.json", SHA256: ref.BodyRef.SHA256, Bytes: ref.BodyRef.Bytes}
	if _, err := tasks.LoadBody(ctx, bodies, bad); !errs.Permanent(err) {
		t.Errorf("reference to another key: %v", err)
	}
	if c, err := tasks.LoadBody(ctx, nil, cmd); err != nil || c.Args == nil {
		t.Error("a command without reference is returned as is")
	}
	if _, err := tasks.LoadBody(ctx, failing{}, ref); err == nil || errs.Permanent(err) {
		t.Errorf("a store failure is transient, got %v", err)
	}
}

type failing struct{}

func (failing) Put(context.Context, string, []byte, string) error { return errors.New("down") }
func (failing) Get(context.Context, string) ([]byte, error)       { return nil, os.ErrDeadlineExceeded }

// TestQueueOf: a unit due now (or within half a second) goes to the work
// queue; a later one (a delayed retry, a watchdog, a timeout) to timers.
func TestQueueOf(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	d := &Dispatcher{WorkQueue: "projects/p/locations/l/queues/work", TimersQueue: "projects/p/locations/l/queues/timers"}
	cases := []struct {
		name      string
		notBefore time.Time
		want      string
	}{
		{"no schedule time", time.Time{}, d.WorkQueue},
		{"in the past", now.Add(-time.Minute), d.WorkQueue},
		{"now", now, d.WorkQueue},
		{"within half a second", now.Add(500 * time.Millisecond), d.WorkQueue},
		{"later", now.Add(501 * time.Millisecond), d.TimersQueue},
		{"a delayed retry", now.Add(2 * time.Second), d.TimersQueue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := types.Command{Kind: types.CmdRunStep, ExecutionID: "ex1", Step: "s", StepRun: 1, NotBefore: c.notBefore}
			if got := d.queueOf(cmd, now); got != c.want {
				t.Fatalf("queueOf = %s, want %s", got, c.want)
			}
		})
	}
}
