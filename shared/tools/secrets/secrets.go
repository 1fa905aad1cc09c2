// Package secrets implements the `secrets` task kind: it reads secret
// values for a playbook from a provider and returns them as the task's
// result, the way a keychain entry (NoETL DSL spec "Document") exposes fields.
//
// Providers:
//
//   - env: environment variables of the engine process, restricted by an
//     allow-list (Options.EnvAllow, default only NOETL_SECRET_*). The
//     engine's own settings and secrets are never readable, whatever the
//     allow-list says: names starting with NOETL_ (except the NOETL_SECRET_
//     prefix), GOOGLE_, GCLOUD_, CLOUDSDK_, GCE_, K_ (Cloud Run), FUNCTION_,
//     X_GOOGLE_, AWS_, and the emulator hosts (*_EMULATOR_HOST), as well as
//     PATH-like process settings (HOME, USER, PWD, SHELL, LD_*). An operator
//     opts a variable in by naming it (or a prefix ending in '*') in the
//     allow-list.
//   - credential (aliases store, credentials, keychain): the credential
//     store (shared/credentials), the same store POST /credentials writes.
//
// The values are secrets: the outcome lists them in Extra["secrets"] so
// that the worker can mask them in events and logs like keychain values.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// DefaultEnvAllow is the env provider's allow-list when Options.EnvAllow is
// nil: variables whose name starts with NOETL_SECRET_.
var DefaultEnvAllow = []string{"NOETL_SECRET_*"}

// ExtraSecrets is the Outcome.Extra key listing the secret string values
// of a result ([]string), for the worker's redactor.
const ExtraSecrets = "secrets"

// Options configures the tool.
type Options struct {
	// Credentials is the credential store of the credential provider; nil
	// makes that provider fail with a config error.
	Credentials credentials.Store
	// EnvAllow lists the environment variables the env provider may read:
	// exact names, or prefixes ending in '*'. nil means DefaultEnvAllow; an
	// empty, non-nil list turns the env provider off. The deny rules of the
	// package documentation apply on top.
	EnvAllow []string
	// Getenv replaces os.LookupEnv (tests).
	Getenv func(string) (string, bool)
}

// Tool is the secrets task kind. It is safe for concurrent use.
type Tool struct{ opts Options }

// New returns a secrets tool configured by opts.
func New(opts Options) *Tool {
	if opts.EnvAllow == nil {
		opts.EnvAllow = DefaultEnvAllow
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	return &Tool{opts: opts}
}

// Exec reads the secrets its spec names (toolspec.Secrets, decoded from
// config; tools.Adapt turns Exec into a tools.Tool; args are not used):
//
//	provider   env | credential (default credential; aliases store,
//	           credentials, keychain)
//	key        one variable (env) or one credential (credential); also
//	           spelled secret, secret_name or credential (`name:` is the
//	           task's label)
//	map        mapping of result field → variable name (env), or → credential
//	           name or "credential.field" (credential), for several values
//	           at once (NoETL's keychain `map:` shape)
//	default    the value when the variable is unset or the credential (or
//	           field) does not exist, instead of a not_found error (a
//	           single missing credential then gives {"name", "value"})
//
// Result: with `map`, {field: value}; with env `name`, {"name": n, "value":
// v}; with credential `name`, the credential's data fields plus "kind". A
// variable that is not allow-listed or is one of the engine's own is error
// kind "config"; an unset variable, an unknown credential or a missing
// field is kind "not_found" (not retryable); a failing store is kind
// "credentials" (retryable).
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, _ float64) types.Outcome {
	var cfg toolspec.Secrets
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	provider := "credential"
	if p := strings.TrimSpace(cfg.Provider); p != "" {
		provider = strings.ToLower(p)
	}
	switch provider {
	case "env", "environment":
		provider = "env"
	case "credential", "credentials", "store", "keychain", "noetl":
		provider = "credential"
	default:
		return conf.ConfigError("secrets task: provider %q is not supported here (env or credential; cloud secret managers are read through the credential store)", provider)
	}
	var out map[string]any
	var secretVals []string
	var err error
	if m := cfg.Map; m != nil {
		if len(m) == 0 {
			return conf.ConfigError("secrets task: `map` must be a non-empty mapping of field to %s", what(provider))
		}
		out = make(map[string]any, len(m))
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, field := range keys {
			ref := m[field]
			if strings.TrimSpace(ref) == "" {
				return conf.ConfigError("secrets task: map.%s must be a %s", field, what(provider))
			}
			var v any
			if provider == "env" {
				v, err = t.env(strings.TrimSpace(ref))
			} else {
				v, err = t.credentialRef(ctx, strings.TrimSpace(ref))
			}
			if err != nil {
				d, ok := t.fallback(cfg, err)
				if !ok {
					return failure(err)
				}
				v = d
			}
			out[field] = v
		}
	} else {
		name := cfg.Key
		if strings.TrimSpace(name) == "" {
			return conf.ConfigError("secrets task: `name` (a %s) or `map` is required", what(provider))
		}
		name = strings.TrimSpace(name)
		if provider == "env" {
			v, err := t.env(name)
			if err != nil {
				d, ok := t.fallback(cfg, err)
				if !ok {
					return failure(err)
				}
				out = map[string]any{"name": name, "value": d}
				secretVals = []string{}
			} else {
				out = map[string]any{"name": name, "value": v}
				secretVals = []string{v}
			}
		} else {
			out, err = t.credential(ctx, name)
			if err != nil {
				d, ok := t.fallback(cfg, err)
				if !ok {
					return failure(err)
				}
				out = map[string]any{"name": name, "value": d}
			}
		}
	}
	if secretVals == nil {
		secretVals = secretStrings(out)
	}
	return types.Outcome{Status: types.StatusOK, Result: out, Extra: map[string]any{ExtraSecrets: secretVals}}
}

// fallback returns the spec's default (when given, even null) for a
// not_found failure.
func (t *Tool) fallback(cfg toolspec.Secrets, err error) (any, bool) {
	var f *fail
	if cfg.Default.Set && errors.As(err, &f) && f.kind == types.ErrKindNotFound {
		return cfg.Default.Value, true
	}
	return nil, false
}

func what(provider string) string {
	if provider == "env" {
		return "environment variable name"
	}
	return "credential name (or credential.field)"
}

// fail is a classified failure.
type fail struct {
	kind      types.ErrorKind
	retryable bool
	msg       string
}

func (f *fail) Error() string { return f.msg }

func failure(err error) types.Outcome {
	var f *fail
	if errors.As(err, &f) {
		return conf.Fail(f.kind, f.retryable, "secrets task: %s", f.msg)
	}
	return conf.Fail(types.ErrKindInternal, true, "secrets task: %v", err)
}

// deniedPrefixes are the engine's own environment (never readable).
var deniedPrefixes = []string{"NOETL_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "GCE_", "K_", "FUNCTION_", "X_GOOGLE_", "AWS_", "LD_"}

// deniedNames are process settings that are never readable.
var deniedNames = map[string]bool{"HOME": true, "USER": true, "LOGNAME": true, "PWD": true, "SHELL": true, "PATH": true, "PORT": true}

// EnvReadable reports whether the env provider may read the variable name
// under allow (see the package documentation for the rule).
func EnvReadable(name string, allow []string) bool {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return false
	}
	up := strings.ToUpper(name)
	if deniedNames[up] || strings.HasSuffix(up, "_EMULATOR_HOST") {
		return false
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(up, p) && !(p == "NOETL_" && strings.HasPrefix(up, "NOETL_SECRET_")) {
			return false
		}
	}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if pre, ok := strings.CutSuffix(a, "*"); ok {
			if pre != "" && strings.HasPrefix(name, pre) {
				return true
			}
		} else if a != "" && a == name {
			return true
		}
	}
	return false
}

func (t *Tool) env(name string) (string, error) {
	if !EnvReadable(name, t.opts.EnvAllow) {
		return "", &fail{types.ErrKindConfig, false, fmt.Sprintf("environment variable %q is not readable by playbooks: only allow-listed variables (%s) that are not the engine's own settings can be read", name, strings.Join(t.opts.EnvAllow, ", "))}
	}
	v, ok := t.opts.Getenv(name)
	if !ok {
		return "", &fail{types.ErrKindNotFound, false, fmt.Sprintf("environment variable %q is not set", name)}
	}
	return v, nil
}

func (t *Tool) credential(ctx context.Context, name string) (map[string]any, error) {
	if t.opts.Credentials == nil {
		return nil, &fail{types.ErrKindConfig, false, fmt.Sprintf("credential %q: no credential store is configured", name)}
	}
	c, err := t.opts.Credentials.CredentialGet(ctx, name)
	if errors.Is(err, credentials.ErrNotFound) {
		return nil, &fail{types.ErrKindNotFound, false, fmt.Sprintf("credential %q not found (register it with POST /credentials)", name)}
	}
	if errors.Is(err, credentials.ErrNotGranted) {
		return nil, &fail{types.ErrKindForbidden, false, "secrets task: " + err.Error()}
	}
	if err != nil {
		return nil, &fail{types.ErrKindCredentials, errs.Retryable(err), fmt.Sprintf("reading credential %q: %v", name, err)}
	}
	data, _ := jsonx.Clone(c.Data).(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	data["kind"], _ = credentials.NormalizeKind(c.Kind)
	return data, nil
}

// credentialRef reads "name" (the whole data) or "name.field".
func (t *Tool) credentialRef(ctx context.Context, ref string) (any, error) {
	name, field, hasField := strings.Cut(ref, ".")
	data, err := t.credential(ctx, name)
	if err != nil || !hasField {
		return data, err
	}
	v, ok := data[field]
	if !ok {
		return nil, &fail{types.ErrKindNotFound, false, fmt.Sprintf("credential %q has no field %q", name, field)}
	}
	return v, nil
}

// secretStrings lists the non-empty string leaves of v except the values
// of "kind" keys (credential kinds are not secret).
func secretStrings(v any) []string {
	var out []string
	var walk func(k string, x any)
	walk = func(k string, x any) {
		switch y := x.(type) {
		case string:
			if y != "" && k != "kind" {
				out = append(out, y)
			}
		case map[string]any:
			for kk, e := range y {
				walk(kk, e)
			}
		case []any:
			for _, e := range y {
				walk(k, e)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return out
}
