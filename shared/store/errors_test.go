package store_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// failingFirestore is a Firestore server whose document reads
// (BatchGetDocuments), commits and queries answer err.
type failingFirestore struct {
	firestorepb.UnimplementedFirestoreServer
	err error
}

func (f *failingFirestore) BatchGetDocuments(*firestorepb.BatchGetDocumentsRequest, firestorepb.Firestore_BatchGetDocumentsServer) error {
	return f.err
}

func (f *failingFirestore) Commit(context.Context, *firestorepb.CommitRequest) (*firestorepb.CommitResponse, error) {
	return nil, f.err
}

func (f *failingFirestore) RunQuery(*firestorepb.RunQueryRequest, firestorepb.Firestore_RunQueryServer) error {
	return f.err
}

// TestFirestoreErrorCodes: the Firestore driver's errors carry the code of
// the gRPC status Firestore answered; a create that finds its document is
// ErrExists. Only codes the client does not retry are injected (it retries
// Unavailable, Internal, DeadlineExceeded and ResourceExhausted on reads
// itself; errs.FromGRPC maps those).
func TestFirestoreErrorCodes(t *testing.T) {
	srv := &failingFirestore{}
	gs := grpc.NewServer()
	firestorepb.RegisterFirestoreServer(gs, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	t.Setenv("FIRESTORE_EMULATOR_HOST", lis.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := store.OpenFirestore(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })

	for _, c := range []codes.Code{codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument, codes.FailedPrecondition, codes.Unimplemented} {
		srv.err = status.Error(c, "injected")
		want := errs.FromGRPC(c)
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
	srv.err = status.Error(codes.AlreadyExists, "exists")
	if err := f.ExecutionCreate(ctx, &store.Execution{State: &engine.State{ExecutionID: "e1"}}); !errors.Is(err, store.ErrExists) {
		t.Errorf("ExecutionCreate of an existing document: %v, want ErrExists", err)
	}
}
