// Package creds resolves the `auth` of the tool kinds that talk to a
// service (nats, subscription, transfer, gcs, secrets): either the mapping
// the worker already resolved from the playbook's keychain, or a credential
// name looked up in the credential store (NoETL v2 playbooks
// write `auth: nats_credential` without declaring a keychain).
package creds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// Error is a failure to resolve an auth value, already classified as the
// outcome the tool returns.
type Error struct{ Outcome types.Outcome }

// Error implements error.
func (e *Error) Error() string { return e.Outcome.Error.Message }

// Resolve returns the connection fields of auth:
//
//   - a mapping (a keychain entry the worker resolved, or inline fields) is
//     returned as a copy;
//   - a string names a credential in store; its data is returned with
//     "kind" set to the canonical credential kind.
//
// kinds, when given, are the credential kinds the caller accepts (a mapping
// without "kind" is accepted as is); "secret" is always accepted. what
// names the caller in messages ("nats task"). Errors are *Error: kind
// "config" (not retryable) for a missing store, an unknown name, a wrong
// kind or a malformed value; kind "credentials" (retryable) when the store
// fails.
func Resolve(ctx context.Context, store credentials.Store, auth any, what string, kinds ...string) (map[string]any, error) {
	var out map[string]any
	switch a := auth.(type) {
	case nil:
		return nil, &Error{conf.ConfigError("%s: `auth` is empty", what)}
	case string:
		name := strings.TrimSpace(a)
		if name == "" {
			return nil, &Error{conf.ConfigError("%s: `auth` is empty", what)}
		}
		if store == nil {
			return nil, &Error{conf.ConfigError("%s: auth %q names a credential but no credential store is configured", what, name)}
		}
		c, err := store.CredentialGet(ctx, name)
		if errors.Is(err, credentials.ErrNotFound) {
			return nil, &Error{conf.ConfigError("%s: credential %q not found (register it with POST /credentials)", what, name)}
		}
		if errors.Is(err, credentials.ErrNotGranted) {
			return nil, &Error{conf.Fail(types.ErrKindForbidden, false, "%s: %v", what, err)}
		}
		if err != nil {
			return nil, &Error{conf.FailCode(errs.CodeOf(err), types.ErrKindCredentials, "%s: reading credential %q: %v", what, name, err)}
		}
		out, _ = jsonx.Clone(c.Data).(map[string]any)
		if out == nil {
			out = map[string]any{}
		}
		k, _ := credentials.NormalizeKind(c.Kind)
		out["kind"] = k
	default:
		m, ok := conf.Map(auth)
		if !ok {
			return nil, &Error{conf.ConfigError("%s: `auth` must be a credential name or a mapping of connection fields, got %T", what, auth)}
		}
		out, _ = jsonx.Clone(m).(map[string]any)
	}
	if len(kinds) > 0 {
		if k, ok := out["kind"].(string); ok && k != "" {
			c, _ := credentials.NormalizeKind(k)
			if c == "" {
				c = k
			}
			accepted := c == credentials.KindSecret
			for _, want := range kinds {
				accepted = accepted || c == want
			}
			if !accepted {
				return nil, &Error{conf.ConfigError("%s: credential of kind %s cannot be used here (want %s)", what, c, strings.Join(kinds, " or "))}
			}
		}
	}
	return out, nil
}

// Outcome returns the outcome of a Resolve error (an internal error outcome
// for anything else).
func Outcome(err error) types.Outcome {
	var e *Error
	if errors.As(err, &e) {
		return e.Outcome
	}
	return conf.Fail(types.ErrKindInternal, true, "%v", err)
}

// String returns the first non-empty string among keys of m.
func String(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// Describe is "credential <name>" or "inline auth" for messages.
func Describe(auth any) string {
	if s, ok := auth.(string); ok {
		return fmt.Sprintf("credential %q", s)
	}
	return "inline auth"
}
