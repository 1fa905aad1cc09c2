// Package googleerr maps the errors of Google's client libraries to the
// engine's error codes: a gRPC status (Firestore, Pub/Sub, Cloud Tasks,
// Secret Manager) by FromGRPC, a googleapi.Error (the JSON APIs: GCS) by
// its HTTP status (errs.FromHTTP). It is apart from shared/errs so that
// errs links nothing but the standard library and every package, down to
// the leaves the pure engine and the CLI link, can declare its sentinels
// with a code.
//
// Importing the package registers the mapping with errs.CodeOf (an
// errs.Backend), so errs.CodeOf classifies a raw client error in any
// build that links a Google client driver: each such driver imports it
// (shared/planes TestGoogleErrorsAreCoded checks every build that links
// the clients' error types links it too).
package googleerr

import (
	"errors"

	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/errs"
)

func init() { errs.RegisterBackend(CodeOf) }

// CodeOf returns the code of a Google client library's error, and false
// for an error that is neither a googleapi.Error with a status nor a gRPC
// status other than OK. An HTTP API's error is read by its HTTP status
// first: the googleapi.Error also carries a gRPC status derived from it
// by gax's coarser table (every other 4xx FailedPrecondition, which would
// be retried).
func CodeOf(err error) (errs.Code, bool) {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code != 0 {
		return errs.FromHTTP(ge.Code), true
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		return FromGRPC(s.Code()), true
	}
	return errs.Unknown, false
}

// FromGRPC returns the code of a gRPC status code (go-cloud's mapping):
// Aborted (a contended transaction) is FailedPrecondition and OutOfRange
// InvalidArgument, Unauthenticated PermissionDenied, DataLoss Internal.
func FromGRPC(c codes.Code) errs.Code {
	switch c {
	case codes.NotFound:
		return errs.NotFound
	case codes.AlreadyExists:
		return errs.AlreadyExists
	case codes.FailedPrecondition, codes.Aborted:
		return errs.FailedPrecondition
	case codes.InvalidArgument, codes.OutOfRange:
		return errs.InvalidArgument
	case codes.ResourceExhausted:
		return errs.ResourceExhausted
	case codes.Unavailable:
		return errs.Unavailable
	case codes.DeadlineExceeded:
		return errs.DeadlineExceeded
	case codes.Canceled:
		return errs.Canceled
	case codes.Internal, codes.DataLoss:
		return errs.Internal
	case codes.PermissionDenied, codes.Unauthenticated:
		return errs.PermissionDenied
	case codes.Unimplemented:
		return errs.Unimplemented
	}
	return errs.Unknown
}
