package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), Canceled},
		{"grpc NotFound", status.Error(codes.NotFound, "x"), NotFound},
		{"grpc AlreadyExists", status.Error(codes.AlreadyExists, "x"), AlreadyExists},
		{"grpc FailedPrecondition", status.Error(codes.FailedPrecondition, "x"), FailedPrecondition},
		{"grpc Aborted (contention) retries later", status.Error(codes.Aborted, "x"), FailedPrecondition},
		{"grpc InvalidArgument", status.Error(codes.InvalidArgument, "x"), InvalidArgument},
		{"grpc OutOfRange", status.Error(codes.OutOfRange, "x"), InvalidArgument},
		{"grpc ResourceExhausted", status.Error(codes.ResourceExhausted, "x"), ResourceExhausted},
		{"grpc Unavailable", status.Error(codes.Unavailable, "x"), Unavailable},
		{"grpc DeadlineExceeded is the server's, transient", status.Error(codes.DeadlineExceeded, "x"), Unavailable},
		{"grpc Canceled", status.Error(codes.Canceled, "x"), Canceled},
		{"grpc Internal", status.Error(codes.Internal, "x"), Internal},
		{"grpc DataLoss", status.Error(codes.DataLoss, "x"), Internal},
		{"grpc PermissionDenied is not classified", status.Error(codes.PermissionDenied, "x"), Unknown},
		{"wrapped grpc status", fmt.Errorf("tasks: %w", status.Error(codes.AlreadyExists, "x")), AlreadyExists},
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
		t.Fatal("only InvalidArgument is permanent")
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
