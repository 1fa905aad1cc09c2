package cloudtasks

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/errs/googleerr"
	"github.com/noetl/gcpengine/shared/types"
)

// failingTasks is a Cloud Tasks server whose CreateTask, DeleteTask and
// ListTasks answer err.
type failingTasks struct {
	cloudtaskspb.UnimplementedCloudTasksServer
	err error
}

func (f *failingTasks) CreateTask(context.Context, *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	return nil, f.err
}

func (f *failingTasks) DeleteTask(context.Context, *cloudtaskspb.DeleteTaskRequest) (*emptypb.Empty, error) {
	return nil, f.err
}

func (f *failingTasks) ListTasks(context.Context, *cloudtaskspb.ListTasksRequest) (*cloudtaskspb.ListTasksResponse, error) {
	return nil, f.err
}

// TestDispatcherErrorCodes: the dispatcher's errors carry the code of the
// gRPC status Cloud Tasks answered (a duplicate name is no error: created
// false; deleting a task that is gone is no error).
func TestDispatcherErrorCodes(t *testing.T) {
	srv := &failingTasks{}
	gs := grpc.NewServer()
	cloudtaskspb.RegisterCloudTasksServer(gs, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	t.Setenv("CLOUDTASKS_EMULATOR_HOST", lis.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := loc + "/queues/work"
	d, err := Open(ctx, q, q, "http://127.0.0.1:1/execute")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cmd := types.Command{Kind: types.CmdRunStep, ExecutionID: "e1", Step: "s", StepRun: 1}

	// CreateTask is never retried by the client: every code reaches us.
	for _, c := range []codes.Code{codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument,
		codes.FailedPrecondition, codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.Internal,
		codes.Unimplemented, codes.Unknown} {
		srv.err = status.Error(c, "injected")
		created, err := d.TaskCreate(ctx, cmd, time.Now())
		if got, want := errs.CodeOf(err), googleerr.FromGRPC(c); got != want || created {
			t.Errorf("CreateTask answered %s: %v, %v (code %s), want code %s", c, created, err, got, want)
		}
	}
	srv.err = status.Error(codes.AlreadyExists, "duplicate")
	if created, err := d.TaskCreate(ctx, cmd, time.Now()); created || err != nil {
		t.Errorf("a duplicate name: %v, %v; want false, nil", created, err)
	}

	srv.err = status.Error(codes.NotFound, "gone")
	if err := d.TaskDelete(ctx, cmd, time.Now()); err != nil {
		t.Errorf("deleting a task that is gone: %v", err)
	}
	// DeleteTask and ListTasks retry Unavailable and DeadlineExceeded in
	// the client: only codes it does not retry are injected.
	for _, c := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument} {
		srv.err = status.Error(c, "injected")
		if err := d.TaskDelete(ctx, cmd, time.Now()); errs.CodeOf(err) != googleerr.FromGRPC(c) {
			t.Errorf("DeleteTask answered %s: %v (code %s)", c, err, errs.CodeOf(err))
		}
		if _, err := d.TaskDeleteExecution(ctx, "e1"); errs.CodeOf(err) != googleerr.FromGRPC(c) || !errors.Is(err, srv.err) {
			t.Errorf("ListTasks answered %s: %v (code %s)", c, err, errs.CodeOf(err))
		}
	}
}
