package router_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps gRPC statuses as in a build with the drivers
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/types"
)

// TestHandleForeignNotFound: only the execution's own absence drops an
// event. A NotFound from another backend while the transition applies (a
// Cloud Tasks queue that does not exist, as the tasks driver reports it)
// is returned, so route dead-letters the batch instead of acking it as an
// event of an unknown execution and leaving the execution without its
// next unit (store.ErrNotFound used to match every NotFound).
func TestHandleForeignNotFound(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	r := &router.Router{Control: env.Control, Log: slog.New(slog.DiscardHandler)}
	queueGone := errs.Wrap(errs.CodeOf(status.Error(codes.NotFound, "queue work does not exist")), status.Error(codes.NotFound, "queue work does not exist"), "tasks: create task")
	env.Tasks.FailCreate = controltest.FailTimes[types.Command](1, queueGone, nil)
	b := requested(t, env, "ex1")
	err := r.Handle(ctx, b)
	if !errors.Is(err, queueGone) || !errs.Permanent(err) {
		t.Fatalf("Handle = %v, want the tasks driver's NotFound (dead-lettered, not dropped)", err)
	}
	// The transition is committed with its outbox: a replay of the
	// dead-lettered batch creates the unit.
	if err := r.Handle(ctx, b); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if n := len(env.Tasks.Created()); n != 1 {
		t.Fatalf("%d units after the replay, want 1", n)
	}
}
