package errs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

func TestCodeOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, Unknown},
		{"plain error", errors.New("x"), Unknown},
		{"coded", New(NotFound, "no %s", "x"), NotFound},
		{"wrapped coded", fmt.Errorf("outer: %w", New(InvalidArgument, "bad")), InvalidArgument},
		{"Wrap sets the code over a coded cause", Wrap(Unavailable, New(NotFound, "x"), "retry"), Unavailable},
		{"context canceled", context.Canceled, Canceled},
		{"wrapped deadline (was Canceled)", fmt.Errorf("call: %w", context.DeadlineExceeded), DeadlineExceeded},
		{"network timeout", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), DeadlineExceeded},
		{"a registered backend's error", fmt.Errorf("x: %w", backendErr{}), AlreadyExists},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CodeOf(c.err); got != c.want {
				t.Fatalf("CodeOf(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}

func TestIsAndPermanent(t *testing.T) {
	bad := fmt.Errorf("decode: %w", New(InvalidArgument, "not JSON"))
	if !Is(bad, InvalidArgument) || Is(bad, NotFound) || Is(nil, Unknown) {
		t.Fatal("Is does not follow the code")
	}
	if !Permanent(bad) || Permanent(New(Unavailable, "x")) || Permanent(nil) || Permanent(errors.New("x")) {
		t.Fatal("InvalidArgument is permanent; Unavailable, unclassified errors and nil are not")
	}
	sentinel := &Error{Code: NotFound}
	if !errors.Is(fmt.Errorf("w: %w", New(NotFound, "doc x")), sentinel) {
		t.Fatal("a code sentinel (no message) matches any error of its code")
	}
	held := &Error{Code: FailedPrecondition, Msg: "lease held"}
	if errors.Is(New(FailedPrecondition, "other"), held) || !errors.Is(fmt.Errorf("w: %w", held), held) {
		t.Fatal("a sentinel with a message matches only itself")
	}
	cause := errors.New("root")
	if w := Wrap(Internal, cause, "ctx"); !errors.Is(w, cause) || w.Error() != "ctx: root" {
		t.Fatalf("Wrap: %v", w)
	}
	if Wrap(Internal, nil, "x") != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{Code: NotFound, Msg: "m", Err: errors.New("c")}, "m: c"},
		{&Error{Code: NotFound, Msg: "m"}, "m"},
		{&Error{Code: NotFound, Err: errors.New("c")}, "c"},
		{&Error{Code: Unavailable}, "Unavailable"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Fatalf("Error() = %q, want %q", got, c.want)
		}
	}
	if Code(99).String() != "Code(99)" || Internal.String() != "Internal" {
		t.Fatal("Code.String")
	}
}

// TestPolicyTable is the one table, row by row: what is retried, what is
// dead-lettered at once, and what every function answers.
func TestPolicyTable(t *testing.T) {
	want := map[Code]struct {
		retry, later bool
		http         int
		reply        Reply
	}{
		Unknown:            {true, false, 503, ReplyRetry},
		NotFound:           {false, false, 404, ReplyDeadLetter},
		AlreadyExists:      {false, false, 409, ReplyDeadLetter},
		FailedPrecondition: {true, true, 503, ReplyRetryLater},
		InvalidArgument:    {false, false, 400, ReplyDeadLetter},
		ResourceExhausted:  {true, false, 429, ReplyRetry},
		Unavailable:        {true, false, 503, ReplyRetry},
		Canceled:           {true, false, 503, ReplyRetry},
		Internal:           {true, false, 500, ReplyRetry},
		PermissionDenied:   {false, false, 403, ReplyDeadLetter},
		DeadlineExceeded:   {true, false, 504, ReplyRetry},
		Unimplemented:      {false, false, 501, ReplyDeadLetter},
	}
	if len(Codes()) != len(want) {
		t.Fatalf("Codes() = %v: the table covers %d codes", Codes(), len(want))
	}
	for _, c := range Codes() {
		w, ok := want[c]
		if !ok {
			t.Fatalf("code %s has no expected row", c)
		}
		p := PolicyOf(c)
		err := Wrap(c, errors.New("cause"), "op")
		if p.Retry != w.retry || p.Later != w.later || p.HTTPStatus != w.http {
			t.Errorf("PolicyOf(%s) = %+v, want retry %v later %v http %d", c, p, w.retry, w.later, w.http)
		}
		if Retryable(err) != w.retry || Permanent(err) == w.retry || HTTPStatus(err) != w.http || ReplyOf(err) != w.reply {
			t.Errorf("%s: Retryable %v Permanent %v HTTPStatus %d ReplyOf %v", c, Retryable(err), Permanent(err), HTTPStatus(err), ReplyOf(err))
		}
	}
	if PolicyOf(Code(99)) != PolicyOf(Unknown) {
		t.Error("an unknown code must follow Unknown's row")
	}
	if Retryable(nil) || Permanent(nil) || HTTPStatus(nil) != 200 || ReplyOf(nil) != ReplyDone {
		t.Error("nil is done: not retried, not dead-lettered, 200")
	}
	for r, s := range map[Reply]int{ReplyDone: 200, ReplyDeadLetter: 200, ReplyRetryLater: 503, ReplyRetry: 500} {
		if r.HTTPStatus() != s {
			t.Errorf("Reply %d answers %d, want %d", r, r.HTTPStatus(), s)
		}
	}
	// The mis-mappings this table fixed: a context deadline is retried as
	// a deadline, a missing object or credential is dead-lettered at once
	// instead of retrying until the DLQ.
	if c := CodeOf(fmt.Errorf("x: %w", context.DeadlineExceeded)); c != DeadlineExceeded || !Retryable(context.DeadlineExceeded) {
		t.Errorf("context deadline: %s", c)
	}
	if missing := fmt.Errorf("results: get k: %w", Sentinel(NotFound, "results: object not found")); Retryable(missing) {
		t.Error("a missing object must not be retried")
	}
}

func TestFromHTTP(t *testing.T) {
	cases := map[int]Code{
		200: Unknown, 304: Unknown, 400: InvalidArgument, 401: PermissionDenied, 403: PermissionDenied, 404: NotFound,
		405: InvalidArgument, 408: DeadlineExceeded, 409: FailedPrecondition, 410: NotFound, 412: FailedPrecondition,
		413: InvalidArgument, 429: ResourceExhausted, 499: Canceled, 500: Internal, 501: Unimplemented,
		502: Unavailable, 503: Unavailable, 504: DeadlineExceeded, 507: Unavailable,
	}
	for s, want := range cases {
		if got := FromHTTP(s); got != want {
			t.Errorf("FromHTTP(%d) = %s, want %s", s, got, want)
		}
	}
}

func TestSentinel(t *testing.T) {
	a, b := Sentinel(NotFound, "a: not found"), Sentinel(NotFound, "b: not found")
	wrapped := fmt.Errorf("get x: %w", a)
	if !errors.Is(wrapped, a) || errors.Is(wrapped, b) || CodeOf(wrapped) != NotFound || !Is(wrapped, NotFound) {
		t.Fatal("a sentinel matches itself only, and carries its code")
	}
	if !errors.Is(wrapped, &Error{Code: NotFound}) {
		t.Fatal("a code sentinel still matches any error of its code")
	}
	if wrapped.Error() != "get x: a: not found" {
		t.Fatalf("text %q", wrapped.Error())
	}
}

// backendErr is an error of a test backend (registered in init) that
// CodeOf classifies as AlreadyExists only through the registration.
type backendErr struct{}

func (backendErr) Error() string { return "backend" }

func init() {
	RegisterBackend(func(err error) (Code, bool) {
		if errors.As(err, new(backendErr)) {
			return AlreadyExists, true
		}
		return Unknown, false
	})
}
