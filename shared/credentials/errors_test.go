package credentials_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/credentials/credfirestore"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/errs/googleerr"
	"github.com/noetl/gcpengine/shared/store/firestorefault"
)

// TestFirestoreErrorCodes: the credential store's errors carry the code
// Firestore answered; a missing credential is ErrNotFound, code NotFound
// (not retried), and a malformed one ErrInvalid, code InvalidArgument.
func TestFirestoreErrorCodes(t *testing.T) {
	srv := firestorefault.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := firestore.NewClient(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := credfirestore.NewFirestore(c, credfirestore.NewFirestoreValues(c, testSealer(t)))
	for _, code := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument, codes.Unimplemented} {
		srv.Fail(status.Error(code, "injected"))
		if _, err := s.CredentialGet(ctx, "pg"); errs.CodeOf(err) != googleerr.FromGRPC(code) {
			t.Errorf("CredentialGet answered %s: %v (code %s)", code, err, errs.CodeOf(err))
		}
		if _, err := s.CredentialList(ctx); errs.CodeOf(err) != googleerr.FromGRPC(code) {
			t.Errorf("CredentialList answered %s: %v (code %s)", code, err, errs.CodeOf(err))
		}
	}
	srv.Fail(status.Error(codes.NotFound, "missing"))
	if _, err := s.CredentialGet(ctx, "pg"); !errors.Is(err, credentials.ErrNotFound) || errs.Retryable(err) {
		t.Errorf("a missing credential: %v, want ErrNotFound, not retried", err)
	}
	err = s.CredentialPut(ctx, credentials.Credential{Name: "bad name!", Kind: "postgres"})
	if !errors.Is(err, credentials.ErrInvalid) || !errs.Is(err, errs.InvalidArgument) {
		t.Errorf("an invalid credential: %v (code %s), want ErrInvalid, InvalidArgument", err, errs.CodeOf(err))
	}
}
