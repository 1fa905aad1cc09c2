package launch

import (
	"context"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/template"
)

// Keychain resolves a playbook's root keychain (DSL.md "Document") from
// the credential store, rendering templated declarations with the
// execution's workload. It returns an empty map when the playbook declares
// none; errors name every failing entry (credentials.ResolveError). The
// result is never persisted: it is resolved at start (so a missing
// credential rejects the execution) and again where templates render.
func Keychain(ctx context.Context, s credentials.Store, pb *dsl.Playbook, workload map[string]any, executionID string) (map[string]any, error) {
	if len(pb.Keychain) == 0 {
		return map[string]any{}, nil
	}
	render := func(v any) (any, error) {
		return template.RenderValue(v, template.NewScope(template.ScopeParams{Workload: workload, ExecutionID: executionID}))
	}
	return credentials.Resolve(ctx, s, pb.Keychain, render)
}

// Redactor returns the redactor of a resolved keychain: every value of
// every credential is masked wherever it appears (seed 000 §8.9; issue 10:
// also the fields whose names do not look secret), besides secret-named
// keys, URL query secrets and Basic/Bearer values.
func Redactor(kc map[string]any) *redact.Redactor {
	return redact.New(kc)
}
