package template

import (
	"errors"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
)

// TestLimitAndSandboxErrorsArePermanent: a template that hits a limit or
// is refused by the sandbox fails the same way every time, so its error's
// code (errs.CodeOf, through the *Error and the wrapping) is one the
// policy table does not retry: a delivery failing with it is
// dead-lettered, not redelivered. Before the sentinels had a code they
// were Unknown, which is retried.
func TestLimitAndSandboxErrorsArePermanent(t *testing.T) {
	_, err := Render("{{ x }}"+strings.Repeat(" ", 70000), Scope{"x": 1})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	if c := errs.CodeOf(err); c != errs.InvalidArgument {
		t.Errorf("limit error code = %s, want InvalidArgument", c)
	}
	if errs.Retryable(err) || errs.ReplyOf(err) != errs.ReplyDeadLetter {
		t.Errorf("limit error: Retryable %v, reply %v; want not retried, dead-lettered", errs.Retryable(err), errs.ReplyOf(err))
	}

	l := &sandboxLoader{src: "x"}
	_, err = l.Read("/etc/passwd")
	if !errors.Is(err, ErrSandbox) {
		t.Fatalf("loader read a file: %v", err)
	}
	if c := errs.CodeOf(err); c != errs.PermissionDenied || errs.Retryable(err) {
		t.Errorf("sandbox refusal: code %s, Retryable %v; want PermissionDenied, not retried", c, errs.Retryable(err))
	}
	// A sentinel matches itself only, never another of its code.
	if errors.Is(err, ErrLimit) || errors.Is(ErrLimit, errs.Sentinel(errs.InvalidArgument, "other")) {
		t.Error("template sentinels match other errors")
	}
}
