// Package errs gives the engine's errors a code that callers act on,
// instead of messages or scattered sentinels (google/go-cloud's gcerrors:
// "programs should act upon an error's code, not its message"). Drivers
// (store, tasks, bus) return coded errors; each function maps a code to its
// reply in one table (ack, retry, HTTP status).
package errs

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Code classifies an error.
type Code int

// Codes. The zero value is Unknown.
const (
	// Unknown: not classified; treated as transient (retry).
	Unknown Code = iota
	// NotFound: the entity does not exist.
	NotFound
	// AlreadyExists: a create found the entity already there.
	AlreadyExists
	// FailedPrecondition: the operation cannot run now but may later (a
	// lease held by another holder, state older than the command): retry
	// later, without counting it as a failure.
	FailedPrecondition
	// InvalidArgument: the input can never succeed (an undecodable message,
	// a forged or malformed unit): do not retry; dead-letter it.
	InvalidArgument
	// ResourceExhausted: a size or rate limit was hit.
	ResourceExhausted
	// Unavailable: a transient infrastructure failure; retry.
	Unavailable
	// Canceled: the caller's context ended.
	Canceled
	// Internal: a bug; retry (a redelivery may land on a healthy instance)
	// and report.
	Internal
)

var names = map[Code]string{
	Unknown: "Unknown", NotFound: "NotFound", AlreadyExists: "AlreadyExists",
	FailedPrecondition: "FailedPrecondition", InvalidArgument: "InvalidArgument",
	ResourceExhausted: "ResourceExhausted", Unavailable: "Unavailable", Canceled: "Canceled",
	Internal: "Internal",
}

// String returns the code's name.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", int(c))
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

// CodeOf returns the code of err: the code of the first *Error in its
// chain, else a code derived from a gRPC status (the Google Cloud clients'
// errors) or a context error; Unknown otherwise (and for nil, Unknown is
// never returned: nil has no code and CodeOf(nil) is Unknown by
// convention — check err != nil first).
func CodeOf(err error) Code {
	if err == nil {
		return Unknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Canceled
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.NotFound:
			return NotFound
		case codes.AlreadyExists:
			return AlreadyExists
		case codes.FailedPrecondition, codes.Aborted:
			return FailedPrecondition
		case codes.InvalidArgument, codes.OutOfRange:
			return InvalidArgument
		case codes.ResourceExhausted:
			return ResourceExhausted
		case codes.Unavailable, codes.DeadlineExceeded:
			return Unavailable
		case codes.Canceled:
			return Canceled
		case codes.Internal, codes.DataLoss:
			return Internal
		}
	}
	return Unknown
}

// Is reports whether err has code c.
func Is(err error, c Code) bool { return err != nil && CodeOf(err) == c }

// Permanent reports whether redelivering the work that failed with err
// cannot help (InvalidArgument): the message is acked and dead-lettered.
func Permanent(err error) bool { return Is(err, InvalidArgument) }
