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

// Redactor returns the redactor of a resolved keychain: the values of its
// secret fields (password, token, ... and every header value) are masked
// wherever they appear (seed 000 §8.9). Descriptive fields such as host or
// user are left readable.
func Redactor(kc map[string]any) *redact.Redactor {
	secrets := map[string]any{}
	for name, e := range kc {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		keep := map[string]any{}
		for k, v := range m {
			if redact.IsSecretKey(k) || k == "headers" || k == "value" {
				keep[k] = v
			}
		}
		secrets[name] = keep
	}
	return redact.New(secrets)
}
