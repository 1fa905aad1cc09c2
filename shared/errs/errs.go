// Package errs gives the engine's errors a code that callers act on,
// instead of messages or scattered sentinels (google/go-cloud's gcerrors:
// "programs should act upon an error's code, not its message"). Every
// driver and tool boundary (store, bus, tasks, results, credentials,
// catalog, the tools' configuration and backend errors) returns coded
// errors, deriving the code from its backend's error (CodeOf: context,
// and the mappings of the registered backends — shared/errs/googleerr for
// gRPC statuses and googleapi HTTP statuses; a driver with another
// backend maps its own, e.g. SQLSTATE classes in the postgres kind). It
// links only the standard library, so every package may import it. What the engine
// does with a code — retry or not, how a function answers — is in one
// table (PolicyOf), read by Retryable, Permanent, ReplyOf and HTTPStatus.
package errs

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// HTTP status codes (the values of net/http's Status constants), spelled
// here so that errs links no HTTP stack: every package, the engine
// included, may import it.
const (
	statusOK                  = 200
	statusBadRequest          = 400
	statusUnauthorized        = 401
	statusForbidden           = 403
	statusNotFound            = 404
	statusRequestTimeout      = 408
	statusConflict            = 409
	statusGone                = 410
	statusPreconditionFailed  = 412
	statusTooManyRequests     = 429
	statusInternalServerError = 500
	statusNotImplemented      = 501
	statusServiceUnavailable  = 503
	statusGatewayTimeout      = 504
)

// Code classifies an error.
type Code int

// Codes (google/go-cloud's gcerrors, gRPC's codes). The zero value is
// Unknown. What the engine does with each is in the Policy table.
const (
	// Unknown: not classified; treated as transient (retry).
	Unknown Code = iota
	// NotFound: the entity does not exist (a missing result object,
	// credential, playbook, document): do not retry.
	NotFound
	// AlreadyExists: a create found the entity already there: do not
	// retry.
	AlreadyExists
	// FailedPrecondition: the operation cannot run now but may later (a
	// lease held by another holder, state older than the command, a
	// contended write): retry later, without counting it as a failure.
	FailedPrecondition
	// InvalidArgument: the input can never succeed (an undecodable message,
	// a forged or malformed unit, a bad configuration, a value over a size
	// limit): do not retry; dead-letter it.
	InvalidArgument
	// ResourceExhausted: a rate limit or quota was hit: retry (with the
	// transport's backoff).
	ResourceExhausted
	// Unavailable: a transient infrastructure failure; retry.
	Unavailable
	// Canceled: the caller's context was canceled (an instance shutting
	// down, a client gone): retry.
	Canceled
	// Internal: a bug or a broken invariant; retry (a redelivery may land
	// on a healthy instance) and report.
	Internal
	// PermissionDenied: the caller is not allowed (IAM, authentication):
	// do not retry; it fails until the permission is granted.
	PermissionDenied
	// DeadlineExceeded: a deadline expired before the operation finished
	// (the caller's or the server's); retry.
	DeadlineExceeded
	// Unimplemented: the operation is not supported by this backend or
	// build: do not retry.
	Unimplemented
)

var names = map[Code]string{
	Unknown: "Unknown", NotFound: "NotFound", AlreadyExists: "AlreadyExists",
	FailedPrecondition: "FailedPrecondition", InvalidArgument: "InvalidArgument",
	ResourceExhausted: "ResourceExhausted", Unavailable: "Unavailable", Canceled: "Canceled",
	Internal: "Internal", PermissionDenied: "PermissionDenied", DeadlineExceeded: "DeadlineExceeded",
	Unimplemented: "Unimplemented",
}

// Codes returns every code, in declaration order.
func Codes() []Code {
	out := make([]Code, 0, len(names))
	for c := Unknown; int(c) < len(names); c++ {
		out = append(out, c)
	}
	return out
}

// String returns the code's name.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Policy is what the engine does with work that failed with an error of a
// code: the one table the retry decisions and the functions' replies read
// (PolicyOf). Retry is the decision; Later and HTTPStatus refine how it is
// answered.
type Policy struct {
	// Retry reports whether running the same work again can succeed. A
	// function asks for redelivery (a non-2xx answer to a Pub/Sub push or
	// a Cloud Task) when true, and acks the work and files it in the DLQ
	// when false; a tool's error outcome is retryable
	// (types.TaskError.Retryable, for the task's retry policy) when true.
	Retry bool
	// Later: the retry is expected and is not a failure of the work (a
	// lease held by another delivery, state older than the command):
	// execute answers 503 and logs no error.
	Later bool
	// HTTPStatus is the status an HTTP API answers for a request that
	// failed with the code (Unknown: 503, treated as transient).
	HTTPStatus int
}

// policies is the table (google.rpc.Code's HTTP mapping for the statuses;
// Unknown, Canceled and FailedPrecondition answer 503 because the engine
// treats them as "try again").
var policies = map[Code]Policy{
	Unknown:            {Retry: true, HTTPStatus: statusServiceUnavailable},
	NotFound:           {Retry: false, HTTPStatus: statusNotFound},
	AlreadyExists:      {Retry: false, HTTPStatus: statusConflict},
	FailedPrecondition: {Retry: true, Later: true, HTTPStatus: statusServiceUnavailable},
	InvalidArgument:    {Retry: false, HTTPStatus: statusBadRequest},
	ResourceExhausted:  {Retry: true, HTTPStatus: statusTooManyRequests},
	Unavailable:        {Retry: true, HTTPStatus: statusServiceUnavailable},
	Canceled:           {Retry: true, HTTPStatus: statusServiceUnavailable},
	Internal:           {Retry: true, HTTPStatus: statusInternalServerError},
	PermissionDenied:   {Retry: false, HTTPStatus: statusForbidden},
	DeadlineExceeded:   {Retry: true, HTTPStatus: statusGatewayTimeout},
	Unimplemented:      {Retry: false, HTTPStatus: statusNotImplemented},
}

// PolicyOf returns the policy of code c (Unknown's for a code not in the
// table).
func PolicyOf(c Code) Policy {
	if p, ok := policies[c]; ok {
		return p
	}
	return policies[Unknown]
}

// Retryable reports whether work that failed with err may succeed when run
// again (PolicyOf(CodeOf(err)).Retry); false for nil.
func Retryable(err error) bool { return err != nil && PolicyOf(CodeOf(err)).Retry }

// Permanent reports whether redelivering the work that failed with err
// cannot help (its code's policy does not retry: InvalidArgument,
// NotFound, AlreadyExists, PermissionDenied, Unimplemented): the message
// is acked and dead-lettered. False for nil.
func Permanent(err error) bool { return err != nil && !PolicyOf(CodeOf(err)).Retry }

// HTTPStatus returns the status an HTTP API answers for err
// (PolicyOf(CodeOf(err)).HTTPStatus); 200 for nil.
func HTTPStatus(err error) int {
	if err == nil {
		return statusOK
	}
	return PolicyOf(CodeOf(err)).HTTPStatus
}

// Reply is how a function answers the delivery of work (a Pub/Sub push,
// a Cloud Task) by the work's error (ReplyOf).
type Reply int

// Replies.
const (
	// ReplyDone: the work is done (no error): 200.
	ReplyDone Reply = iota
	// ReplyDeadLetter: redelivery cannot help: the function files the
	// work in the DLQ and acks it (200).
	ReplyDeadLetter
	// ReplyRetryLater: redeliver later; not a failure of the work (503).
	ReplyRetryLater
	// ReplyRetry: redeliver with the transport's backoff; a failure of
	// the work (500).
	ReplyRetry
)

// ReplyOf returns the reply to a delivery whose work ended with err, by
// its code's policy.
func ReplyOf(err error) Reply {
	if err == nil {
		return ReplyDone
	}
	p := PolicyOf(CodeOf(err))
	switch {
	case !p.Retry:
		return ReplyDeadLetter
	case p.Later:
		return ReplyRetryLater
	}
	return ReplyRetry
}

// HTTPStatus is the status of the reply's HTTP answer.
func (r Reply) HTTPStatus() int {
	switch r {
	case ReplyRetryLater:
		return statusServiceUnavailable
	case ReplyRetry:
		return statusInternalServerError
	}
	return statusOK
}

// Error is an error with a code. It wraps an optional cause.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// Error implements error.
func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Code.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, target) true when target is an *Error with the
// same code and no message (a code sentinel made with New(code, "")), and
// for identical sentinels.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t == e {
		return true
	}
	return t.Msg == "" && t.Err == nil && t.Code == e.Code
}

// New returns an error with code c and a message formatted from format.
func New(c Code, format string, args ...any) error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns err with code c and a message prefix; nil when err is nil.
func Wrap(c Code, err error, msg string) error {
	if err == nil {
		return nil
	}
	return &Error{Code: c, Msg: msg, Err: err}
}

// Sentinel returns a package sentinel with code c: errors.Is matches it
// only (and errors wrapping it), never another error of the same code, and
// CodeOf of an error wrapping it is c. Packages declare their sentinels
// with it (results.ErrNotFound, credentials.ErrNotFound, ...) so that
// callers may test either the sentinel or the code.
func Sentinel(c Code, msg string) *Error { return &Error{Code: c, Msg: msg} }

// Backend maps the errors of a backend's client library to codes: the
// code of err and true when err is one of its errors, false otherwise.
type Backend func(err error) (Code, bool)

// backends are the registered mappings, consulted in order by CodeOf.
var backends []Backend

// RegisterBackend adds a backend's mapping to CodeOf. It is called from
// the init function of the mapping's package (shared/errs/googleerr), so
// a build that links a driver of the backend (which imports the mapping)
// classifies the backend's raw errors; not safe to call concurrently with
// CodeOf.
func RegisterBackend(b Backend) { backends = append(backends, b) }

// CodeOf returns the code of err: the code of the first *Error in its
// chain; else one derived from the backend's error — a context error
// (Canceled, DeadlineExceeded), a network timeout (os.ErrDeadlineExceeded:
// DeadlineExceeded), a registered backend's mapping (RegisterBackend:
// googleerr's gRPC status for Firestore, Pub/Sub, Cloud Tasks and a
// googleapi.Error's HTTP status for the GCS JSON API); Unknown otherwise.
// nil has no code: CodeOf(nil) is Unknown by convention (check err != nil
// first).
func CodeOf(err error) Code {
	if err == nil {
		return Unknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return DeadlineExceeded
	}
	for _, b := range backends {
		if c, ok := b(err); ok {
			return c
		}
	}
	return Unknown
}

// FromHTTP returns the code of an HTTP status a Google API answered
// (google.rpc.Code's mapping): 400 and the other 4xx InvalidArgument, 401
// and 403 PermissionDenied, 404 and 410 NotFound, 408 and 504
// DeadlineExceeded, 409 (a conflict: ABORTED in Google's APIs) and 412
// FailedPrecondition, 429 ResourceExhausted, 499 Canceled, 500 Internal,
// 501 Unimplemented, 502, 503 and the other 5xx Unavailable; Unknown below
// 400.
func FromHTTP(status int) Code {
	switch status {
	case statusUnauthorized, statusForbidden:
		return PermissionDenied
	case statusNotFound, statusGone:
		return NotFound
	case statusRequestTimeout, statusGatewayTimeout:
		return DeadlineExceeded
	case statusConflict, statusPreconditionFailed:
		return FailedPrecondition
	case statusTooManyRequests:
		return ResourceExhausted
	case 499: // client closed request
		return Canceled
	case statusInternalServerError:
		return Internal
	case statusNotImplemented:
		return Unimplemented
	}
	switch {
	case status >= 500:
		return Unavailable
	case status >= 400:
		return InvalidArgument
	}
	return Unknown
}

// Is reports whether err has code c.
func Is(err error, c Code) bool { return err != nil && CodeOf(err) == c }
