package launch

import (
	"context"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/template"
)

// Keychain resolves a playbook's root keychain (NoETL DSL spec "Document") from
// the credential store for the execution st, rendering templated
// declarations with its workload; a Guard store gives only the
// credentials granted to the execution (Grantee(st), set in the context).
// It returns an empty map when the playbook declares none; errors name
// every failing entry (credentials.ResolveError). The result is never
// persisted: it is resolved at start (so a missing or ungranted
// credential rejects the execution) and again where templates render.
func Keychain(ctx context.Context, s credentials.Store, pb *dsl.Playbook, st *engine.State) (map[string]any, error) {
	return keychain(credentials.WithGrantee(ctx, Grantee(st)), s, pb, st.Workload, st.ExecutionID)
}

func keychain(ctx context.Context, s credentials.Store, pb *dsl.Playbook, workload map[string]any, executionID string) (map[string]any, error) {
	if len(pb.Keychain) == 0 {
		return map[string]any{}, nil
	}
	render := func(v any) (any, error) {
		return template.RenderValue(v, template.NewScope(template.ScopeParams{Workload: workload, ExecutionID: executionID}))
	}
	return credentials.Resolve(ctx, s, pb.Keychain, render)
}

// Redactor returns the redactor of a resolved keychain: every value of
// every credential is masked wherever it appears (NoETL observability spec §8.9; README "Security":
// also the fields whose names do not look secret), besides secret-named
// keys, URL query secrets and Basic/Bearer values.
func Redactor(kc map[string]any) *redact.Redactor {
	return redact.New(kc)
}

// ExecRedactor returns the redactor of an execution (README "Security"):
// every value of its resolved keychain (kc, as Redactor) and every string
// value under a secret-named field of its workload (redact.IsSecretKey:
// workload.api_token, workload.db.password, at any depth) is a secret, on
// top of the key and pattern rules. The engine masks its output with it
// (Value) and its own data — state, commands, plans, stored results —
// with its literal secrets only (Secrets).
func ExecRedactor(kc map[string]any, workload map[string]any) *redact.Redactor {
	ws := WorkloadSecrets(workload)
	if len(ws) == 0 {
		return redact.New(kc)
	}
	all := make(map[string]any, len(kc)+1)
	for k, v := range kc {
		all[k] = v
	}
	vals := make([]any, len(ws))
	for i, s := range ws {
		vals[i] = s
	}
	all["__workload_secrets"] = map[string]any{"values": vals}
	return redact.New(all)
}

// WorkloadSecrets lists the string values found under secret-named
// fields of a workload (redact.IsSecretKey, at any depth; a secret-named
// field's whole value counts: every string inside it). The bare names
// "key" and "auth", secret only as a whole key for output, do not make a
// workload value an execution secret: as workload fields they mostly name
// ordinary things (an object key, a cache key) that must keep flowing
// between steps.
func WorkloadSecrets(workload map[string]any) []string {
	return workloadSecrets(workload)
}

func isWorkloadSecretKey(k string) bool {
	switch strings.ToLower(strings.TrimSpace(k)) {
	case "key", "auth":
		return false
	}
	return redact.IsSecretKey(k)
}

func workloadSecrets(workload map[string]any) []string {
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch x := v.(type) {
		case string:
			if secret {
				out = append(out, x)
			}
		case map[string]any:
			for k, e := range x {
				walk(e, secret || isWorkloadSecretKey(k))
			}
		case []any:
			for _, e := range x {
				walk(e, secret)
			}
		}
	}
	walk(workload, false)
	return out
}
