package googleerr_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/errs/googleerr"
)

// TestCodeOf: importing googleerr makes errs.CodeOf classify the Google
// clients' raw errors (a gRPC status, a googleapi.Error by its HTTP
// status), and googleerr.CodeOf says which errors are its own.
func TestCodeOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want errs.Code
	}{
		{"grpc NotFound", status.Error(codes.NotFound, "x"), errs.NotFound},
		{"grpc AlreadyExists", status.Error(codes.AlreadyExists, "x"), errs.AlreadyExists},
		{"grpc FailedPrecondition", status.Error(codes.FailedPrecondition, "x"), errs.FailedPrecondition},
		{"grpc Aborted (contention) retries later", status.Error(codes.Aborted, "x"), errs.FailedPrecondition},
		{"grpc InvalidArgument", status.Error(codes.InvalidArgument, "x"), errs.InvalidArgument},
		{"grpc OutOfRange", status.Error(codes.OutOfRange, "x"), errs.InvalidArgument},
		{"grpc ResourceExhausted", status.Error(codes.ResourceExhausted, "x"), errs.ResourceExhausted},
		{"grpc Unavailable", status.Error(codes.Unavailable, "x"), errs.Unavailable},
		{"grpc DeadlineExceeded (was Unavailable)", status.Error(codes.DeadlineExceeded, "x"), errs.DeadlineExceeded},
		{"grpc Canceled", status.Error(codes.Canceled, "x"), errs.Canceled},
		{"grpc Internal", status.Error(codes.Internal, "x"), errs.Internal},
		{"grpc DataLoss", status.Error(codes.DataLoss, "x"), errs.Internal},
		{"grpc PermissionDenied (was Unknown)", status.Error(codes.PermissionDenied, "x"), errs.PermissionDenied},
		{"grpc Unauthenticated", status.Error(codes.Unauthenticated, "x"), errs.PermissionDenied},
		{"grpc Unimplemented (was Unknown)", status.Error(codes.Unimplemented, "x"), errs.Unimplemented},
		{"grpc Unknown", status.Error(codes.Unknown, "x"), errs.Unknown},
		{"googleapi 404", &googleapi.Error{Code: 404}, errs.NotFound},
		{"wrapped googleapi 403", fmt.Errorf("gcs: %w", &googleapi.Error{Code: 403, Message: "denied"}), errs.PermissionDenied},
		{"googleapi 429", &googleapi.Error{Code: 429}, errs.ResourceExhausted},
		{"googleapi 503", &googleapi.Error{Code: 503}, errs.Unavailable},
		{"wrapped grpc status", fmt.Errorf("tasks: %w", status.Error(codes.AlreadyExists, "x")), errs.AlreadyExists},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := errs.CodeOf(c.err); got != c.want {
				t.Fatalf("errs.CodeOf(%v) = %s, want %s", c.err, got, c.want)
			}
			if got, ok := googleerr.CodeOf(c.err); got != c.want || !ok {
				t.Fatalf("googleerr.CodeOf(%v) = %s, %v, want %s, true", c.err, got, ok, c.want)
			}
		})
	}
	for _, err := range []error{errors.New("x"), status.Error(codes.OK, ""), &googleapi.Error{}} {
		if c, ok := googleerr.CodeOf(err); ok || c != errs.Unknown {
			t.Errorf("googleerr.CodeOf(%v) = %s, %v, want Unknown, false", err, c, ok)
		}
	}
	if googleerr.FromGRPC(codes.OK) != errs.Unknown {
		t.Error("FromGRPC(OK)")
	}
}
