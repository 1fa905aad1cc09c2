package credentials_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
)

type failingFirestore struct {
	firestorepb.UnimplementedFirestoreServer
	err error
}

func (f *failingFirestore) BatchGetDocuments(*firestorepb.BatchGetDocumentsRequest, firestorepb.Firestore_BatchGetDocumentsServer) error {
	return f.err
}

func (f *failingFirestore) RunQuery(*firestorepb.RunQueryRequest, firestorepb.Firestore_RunQueryServer) error {
	return f.err
}

// TestFirestoreErrorCodes: the credential store's errors carry the code
// Firestore answered; a missing credential is ErrNotFound, code NotFound
// (not retried), and a malformed one ErrInvalid, code InvalidArgument.
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
	c, err := firestore.NewClient(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := credentials.NewFirestore(c, credentials.NewFirestoreValues(c, testSealer(t)))
	for _, code := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument, codes.Unimplemented} {
		srv.err = status.Error(code, "injected")
		if _, err := s.CredentialGet(ctx, "pg"); errs.CodeOf(err) != errs.FromGRPC(code) {
			t.Errorf("CredentialGet answered %s: %v (code %s)", code, err, errs.CodeOf(err))
		}
		if _, err := s.CredentialList(ctx); errs.CodeOf(err) != errs.FromGRPC(code) {
			t.Errorf("CredentialList answered %s: %v (code %s)", code, err, errs.CodeOf(err))
		}
	}
	srv.err = status.Error(codes.NotFound, "missing")
	if _, err := s.CredentialGet(ctx, "pg"); !errors.Is(err, credentials.ErrNotFound) || errs.Retryable(err) {
		t.Errorf("a missing credential: %v, want ErrNotFound, not retried", err)
	}
	err = s.CredentialPut(ctx, credentials.Credential{Name: "bad name!", Kind: "postgres"})
	if !errors.Is(err, credentials.ErrInvalid) || !errs.Is(err, errs.InvalidArgument) {
		t.Errorf("an invalid credential: %v (code %s), want ErrInvalid, InvalidArgument", err, errs.CodeOf(err))
	}
}
