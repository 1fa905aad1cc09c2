package errs_test

import (
	"errors"
	"fmt"
	"testing"

	runneregress "github.com/noetl/gcpengine/runner/egress"
	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
	"github.com/noetl/gcpengine/shared/template"
)

// TestSentinelsCarryTheirCode: the sentinels of sign, auth, egress, oidc,
// credentials, template and tracetree have an errs code, so the one policy table decides
// their retry (a refusal is not retried; a quota is). Without a code a
// sentinel is Unknown, which is retried: a credential a playbook is not
// granted would be asked for again and again.
func TestSentinelsCarryTheirCode(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		code  errs.Code
		retry bool
	}{
		{"sign.ErrUnsigned", sign.ErrUnsigned, errs.InvalidArgument, false},
		{"sign.ErrForged", sign.ErrForged, errs.InvalidArgument, false},
		{"sign.ErrNoKey", sign.ErrNoKey, errs.InvalidArgument, false},
		{"sign.ErrSealed", sign.ErrSealed, errs.InvalidArgument, false},
		{"auth.ErrUnauthenticated", auth.ErrUnauthenticated, errs.PermissionDenied, false},
		{"auth.ErrForbidden", auth.ErrForbidden, errs.PermissionDenied, false},
		{"egress.ErrForbidden", egress.ErrForbidden, errs.PermissionDenied, false},
		{"egress.ErrQuota (runner)", runneregress.ErrQuota, errs.ResourceExhausted, true},
		{"oidc.ErrUnauthorized", oidc.ErrUnauthorized, errs.PermissionDenied, false},
		{"credentials.ErrNotGranted", credentials.ErrNotGranted, errs.PermissionDenied, false},
		{"template.ErrLimit", template.ErrLimit, errs.InvalidArgument, false},
		{"template.ErrSandbox", template.ErrSandbox, errs.PermissionDenied, false},
		{"tracetree.ErrNoSpans", tracetree.ErrNoSpans, errs.NotFound, false},
	} {
		// As callers see them: wrapped with detail.
		err := fmt.Errorf("step s task t: %w: detail", c.err)
		if got := errs.CodeOf(err); got != c.code {
			t.Errorf("%s: code %s, want %s", c.name, got, c.code)
		}
		if got := errs.Retryable(err); got != c.retry {
			t.Errorf("%s: Retryable %v, want %v", c.name, got, c.retry)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: errors.Is lost the sentinel", c.name)
		}
	}
	// A sentinel matches itself only, never another of the same code.
	if errors.Is(auth.ErrForbidden, egress.ErrForbidden) || errors.Is(credentials.ErrNotGranted, auth.ErrForbidden) {
		t.Error("two sentinels of code PermissionDenied match each other")
	}
}

// TestTypedSentinelErrorsCarryTheirCode: the error types that unwrap to a
// sentinel (egress.RefusedError, runneregress.QuotaError,
// credentials.NotGrantedError) carry its code.
func TestTypedSentinelErrorsCarryTheirCode(t *testing.T) {
	if c := errs.CodeOf(&runneregress.QuotaError{Scope: "task", Limit: 1, Setting: "X"}); c != errs.ResourceExhausted {
		t.Errorf("QuotaError: code %s", c)
	}
	if c := errs.CodeOf(&egress.RefusedError{}); c != errs.PermissionDenied {
		t.Errorf("RefusedError: code %s", c)
	}
	if c := errs.CodeOf(&credentials.NotGrantedError{}); c != errs.PermissionDenied || errs.Retryable(&credentials.NotGrantedError{}) {
		t.Errorf("NotGrantedError: code %s, retried", c)
	}
}
