package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// TestSQLStateCode: SQLSTATE classes map to the engine's codes, and the
// retry decision of a postgres error outcome is its code's (errs.PolicyOf).
func TestSQLStateCode(t *testing.T) {
	cases := map[string]errs.Code{
		"08000": errs.Unavailable, "08001": errs.Unavailable, "08006": errs.Unavailable,
		"57P01": errs.Unavailable, "57P02": errs.Unavailable, "57P03": errs.Unavailable,
		"53000": errs.ResourceExhausted, "53100": errs.ResourceExhausted, "53300": errs.ResourceExhausted,
		"40001": errs.FailedPrecondition, "40P01": errs.FailedPrecondition,
		"57014": errs.DeadlineExceeded,
		"23505": errs.AlreadyExists,
		"28000": errs.PermissionDenied, "28P01": errs.PermissionDenied, "42501": errs.PermissionDenied,
		"3D000": errs.NotFound, "3F000": errs.NotFound, "42P01": errs.NotFound, "42703": errs.NotFound, "42883": errs.NotFound,
		"0A000": errs.Unimplemented,
		"XX000": errs.Internal, "XX001": errs.Internal,
		"42601": errs.InvalidArgument, "22012": errs.InvalidArgument, "23503": errs.InvalidArgument, "23502": errs.InvalidArgument,
		"40000": errs.InvalidArgument, "P0001": errs.InvalidArgument, "55P03": errs.InvalidArgument, "": errs.InvalidArgument,
	}
	for state, want := range cases {
		if got := SQLStateCode(state); got != want {
			t.Errorf("SQLStateCode(%q) = %s, want %s", state, got, want)
		}
		if retryableSQLState(state) != errs.PolicyOf(want).Retry {
			t.Errorf("retryable(%q) disagrees with the policy of %s", state, want)
		}
	}
}

// TestFailureCodes: the outcome of a server error (a pgconn.PgError as pgx
// returns it) is retryable by its SQLSTATE's code.
func TestFailureCodes(t *testing.T) {
	tl := &Tool{}
	ctx := t.Context()
	for state, retry := range map[string]bool{"40001": true, "57014": true, "XX000": true, "23505": false, "42501": false, "42P01": false} {
		err := fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "ERROR", Code: state, Message: "injected"})
		o := tl.failure(ctx, ctx, err, "")
		if o.Status != types.StatusError || o.Error.Kind != "postgres" || o.Error.Retryable != retry || o.PG == nil || o.PG.Code != state {
			t.Errorf("%s: %+v %+v, want kind postgres, retryable %v", state, o.Error, o.PG, retry)
		}
	}
	if o := tl.failure(ctx, ctx, errors.New("encode: bad"), ""); o.Error.Retryable {
		t.Errorf("a client-side failure is not retryable: %+v", o.Error)
	}
}
