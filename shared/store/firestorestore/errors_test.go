package firestorestore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/errs/googleerr"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorefault"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
)

// TestFirestoreErrorCodes: the Firestore driver's errors carry the code of
// the gRPC status Firestore answered; a create that finds its document is
// ErrExists. Only codes the client does not retry are injected (it retries
// Unavailable, Internal, DeadlineExceeded and ResourceExhausted on reads
// itself; googleerr.FromGRPC maps those).
func TestFirestoreErrorCodes(t *testing.T) {
	srv := firestorefault.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := firestorestore.OpenFirestore(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })

	for _, c := range []codes.Code{codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument, codes.FailedPrecondition, codes.Unimplemented} {
		srv.Fail(status.Error(c, "injected"))
		want := googleerr.FromGRPC(c)
		if _, err := f.ExecutionGet(ctx, "e1"); errs.CodeOf(err) != want {
			t.Errorf("ExecutionGet answered %s: %v (code %s), want %s", c, err, errs.CodeOf(err), want)
		}
		st := &engine.State{ExecutionID: "e1", Status: engine.ExecRequested}
		if err := f.ExecutionCreate(ctx, &store.Execution{State: st}); errs.CodeOf(err) != want {
			t.Errorf("ExecutionCreate answered %s: %v (code %s), want %s", c, err, errs.CodeOf(err), want)
		}
		if _, err := f.ExecutionList(ctx, store.ExecutionListParams{}); errs.CodeOf(err) != want {
			t.Errorf("ExecutionList answered %s: %v (code %s), want %s", c, err, errs.CodeOf(err), want)
		}
	}
	srv.Fail(status.Error(codes.AlreadyExists, "exists"))
	if err := f.ExecutionCreate(ctx, &store.Execution{State: &engine.State{ExecutionID: "e1"}}); !errors.Is(err, store.ErrExists) {
		t.Errorf("ExecutionCreate of an existing document: %v, want ErrExists", err)
	}
}
