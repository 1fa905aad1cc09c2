package creds

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps gRPC statuses as in a build with the drivers
)

type failingStore struct {
	credentials.Store
	err error
}

func (f failingStore) CredentialGet(context.Context, string) (*credentials.Credential, error) {
	return nil, f.err
}

// TestResolveStoreFailureCodes: a failing credential store makes a
// "credentials" outcome retryable by the code of its error (the one policy
// table): a backend outage is retried, a permission the engine lacks is not
// (it was always retryable); a missing credential is a config error.
func TestResolveStoreFailureCodes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err       error
		kind      string
		retryable bool
	}{
		{status.Error(codes.Unavailable, "down"), "credentials", true},
		{status.Error(codes.DeadlineExceeded, "slow"), "credentials", true},
		{errors.New("unclassified"), "credentials", true},
		{status.Error(codes.PermissionDenied, "iam"), "credentials", false},
		{credentials.ErrNotFound, "config", false},
	}
	for _, c := range cases {
		_, err := Resolve(ctx, failingStore{err: c.err}, "pg", "postgres task")
		var e *Error
		if !errors.As(err, &e) || string(e.Outcome.Error.Kind) != c.kind || e.Outcome.Error.Retryable != c.retryable {
			t.Errorf("store error %v: %v, want kind %s retryable %v", c.err, err, c.kind, c.retryable)
		}
	}
}
