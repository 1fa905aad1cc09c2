package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/errs"
)

// TestUnavailableByCode: a failed store or service call answers the status
// of its error's code from the one policy table (it was 503 whatever the
// code): an unclassified or unavailable backend and a retry-later conflict
// stay 503.
func TestUnavailableByCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{errors.New("firestore: unavailable"), http.StatusServiceUnavailable},
		{status.Error(codes.Unavailable, "down"), http.StatusServiceUnavailable},
		{errs.New(errs.FailedPrecondition, "store: checkpoint: the execution document changed"), http.StatusServiceUnavailable},
		{errs.New(errs.Internal, "control: plan has 2 items for 3 iterations"), http.StatusInternalServerError},
		{status.Error(codes.DeadlineExceeded, "slow"), http.StatusGatewayTimeout},
		{status.Error(codes.PermissionDenied, "iam"), http.StatusForbidden},
		{status.Error(codes.ResourceExhausted, "quota"), http.StatusTooManyRequests},
		{errs.New(errs.InvalidArgument, "store: put subscription: name required"), http.StatusBadRequest},
		{errs.New(errs.AlreadyExists, "exists"), http.StatusConflict},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		unavailable(rec, c.err)
		if rec.Code != c.want || answer(t, rec)["error"] != c.err.Error() {
			t.Errorf("unavailable(%v) = %d %s, want %d", c.err, rec.Code, rec.Body, c.want)
		}
	}
}
