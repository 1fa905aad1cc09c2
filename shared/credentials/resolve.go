package credentials

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// Fields Resolve adds to every resolved keychain entry. They replace data
// fields of the same name.
const (
	// FieldKind holds the canonical kind.
	FieldKind = "kind"
	// FieldSource tells where the values came from: SourceStore or
	// SourceInline.
	FieldSource = "source"
	// FieldHeaders holds, for the http_* kinds, the request headers the
	// credential sets (a mapping of header name to string value).
	FieldHeaders = "headers"
)

// Values of FieldSource.
const (
	// SourceStore: the values were read from the credential store.
	SourceStore = "store"
	// SourceInline: the values were templated inline in the playbook
	// (`value:`), typically from the workload. They are not secret: the
	// playbook and the workload are stored and shown by the API.
	SourceInline = "inline"
)

// ResolveError is one keychain declaration that could not be resolved.
// Resolve joins them (errors.Join); errors.Is(err, ErrNotFound) tells a
// missing credential, errors.Is(err, ErrInvalid) a malformed declaration
// or credential, errors.Is(err, ErrNotGranted) a credential the playbook
// is not granted (a Guard store), anything else a store failure
// (transient).
type ResolveError struct {
	// Name is the keychain entry's name ("keychain[i]" when it has none).
	Name string
	// Credential is the store name looked up ("" for inline values and
	// malformed declarations).
	Credential string
	// Err is the cause.
	Err error
}

// Error implements error: "keychain <name>: <cause>".
func (e *ResolveError) Error() string { return "keychain " + e.Name + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ResolveError) Unwrap() error { return e.Err }

// Resolve resolves a playbook's keychain declarations (dsl.Playbook.Keychain:
// a list of mappings, as loaded) into the value templates read as
// `keychain` (NoETL DSL spec "Document"): entry name → mapping of fields.
//
// A declaration is
//
//	name:        required; the entry is keychain.<name> (and auth: <name>)
//	kind:        optional; postgres | http_bearer | http_basic | http_header |
//	             secret, or a NoETL alias (NormalizeKind). When the credential
//	             comes from the store and kind is set, the two must agree.
//	credential:  the store name (templated; defaults to name)
//	value:       an inline mapping (templated) instead of credential; the
//	             kind defaults to secret; marked source: inline (not secret)
//	when:        optional condition (templated); a false value (false, nil,
//	             0, "", "false", "none", "null", "0", empty list or mapping)
//	             drops the entry
//
// Other keys (scope, description, ...) are ignored. NoETL's Secret Manager
// and OAuth declarations (kind secret_manager, oauth2, gcp_access_token,
// or a `map:` of secret paths) are rejected as not supported yet, never
// guessed at.
//
// A resolved entry is the credential's data plus FieldKind (canonical
// kind), FieldSource (SourceStore or SourceInline) and, for the http_*
// kinds, FieldHeaders; http_bearer entries always carry "token" and
// http_basic entries "username". For example a postgres credential gives
// {"kind": "postgres", "source": "store", "host": ..., "port": ...,
// "user": ..., "password": ..., "database": ...}, which the postgres task
// kind takes as its `auth` mapping.
//
// render renders templated values (`credential`, `value`, `when`) with the
// execution's scope (workload, execution_id; not keychain); nil uses them
// verbatim. s may be nil when no declaration reads the store.
//
// Every declaration is checked; the error joins one *ResolveError per
// failing declaration, each naming it (a missing credential: keychain
// pg_local: credential "pg_local" not found ...). On error the execution
// must not start. The result is never nil.
func Resolve(ctx context.Context, s Store, decls []any, render func(v any) (any, error)) (map[string]any, error) {
	if render == nil {
		render = func(v any) (any, error) { return v, nil }
	}
	out := make(map[string]any, len(decls))
	var errs []error
	for i, d := range decls {
		name := fmt.Sprintf("keychain[%d]", i)
		m, ok := d.(map[string]any)
		if !ok {
			errs = append(errs, &ResolveError{Name: name, Err: invalidf("a keychain entry must be a mapping {name, kind, credential}, got %T", d)})
			continue
		}
		if n, ok := m["name"].(string); ok && strings.TrimSpace(n) != "" {
			name = n
		} else {
			errs = append(errs, &ResolveError{Name: name, Err: invalidf("name is required (templates read the entry as keychain.<name>)")})
			continue
		}
		entry, cred, skip, err := resolveOne(ctx, s, name, m, render)
		if err != nil {
			errs = append(errs, &ResolveError{Name: name, Credential: cred, Err: err})
			continue
		}
		if !skip {
			out[name] = entry
		}
	}
	return out, errors.Join(errs...)
}

// unsupportedKinds are NoETL keychain kinds this engine does not resolve.
var unsupportedKinds = map[string]bool{"secret_manager": true, "oauth2": true, "gcp_access_token": true, "google_oauth": true}

// resolveOne resolves one declaration. cred is the store name looked up.
func resolveOne(ctx context.Context, s Store, name string, m map[string]any, render func(any) (any, error)) (entry map[string]any, cred string, skip bool, err error) {
	if w, ok := m["when"]; ok {
		v, err := render(w)
		if err != nil {
			return nil, "", false, fmt.Errorf("render when: %w", err)
		}
		if !truthy(v) {
			return nil, "", true, nil
		}
	}
	declKind := ""
	if k, ok := m["kind"]; ok && k != nil {
		ks, isStr := k.(string)
		if !isStr {
			return nil, "", false, invalidf("kind must be a string, got %T", k)
		}
		if unsupportedKinds[strings.ToLower(ks)] {
			return nil, "", false, invalidf("kind %q is not supported by this engine yet; store the secret with POST /credentials and declare kind: one of %s", ks, strings.Join(Kinds, ", "))
		}
		c, known := NormalizeKind(ks)
		if !known {
			return nil, "", false, invalidf("unknown kind %q (one of %s)", ks, strings.Join(Kinds, ", "))
		}
		declKind = c
	}
	if _, ok := m["map"]; ok {
		return nil, "", false, invalidf("`map` (Secret Manager secret paths) is not supported yet; store the secret with POST /credentials and reference it with credential: <name>, or give inline values with value: {...}")
	}
	value, hasValue := m["value"]
	credV, hasCred := m["credential"]
	if hasValue && hasCred {
		return nil, "", false, invalidf("set either credential (a stored credential) or value (inline values), not both")
	}

	if hasValue {
		v, err := render(value)
		if err != nil {
			return nil, "", false, fmt.Errorf("render value: %w", err)
		}
		data, ok := jsonx.Clone(v).(map[string]any)
		if !ok || len(data) == 0 {
			return nil, "", false, invalidf("value must render to a non-empty mapping of fields, got %T", v)
		}
		kind := declKind
		if kind == "" {
			kind = KindSecret
		}
		if ps := kindProblems(kind, data); len(ps) > 0 {
			return nil, "", false, invalidf("inline value: %s", strings.Join(ps, "; "))
		}
		return build(kind, SourceInline, data), "", false, nil
	}

	cred = name
	if hasCred && credV != nil {
		v, err := render(credV)
		if err != nil {
			return nil, "", false, fmt.Errorf("render credential: %w", err)
		}
		cs, ok := v.(string)
		if !ok || strings.TrimSpace(cs) == "" {
			return nil, "", false, invalidf("credential must render to a credential name, got %q", fmt.Sprint(v))
		}
		cred = strings.TrimSpace(cs)
	}
	if err := ValidateName(cred); err != nil {
		return nil, cred, false, invalidf("credential %q: %s", cred, err.Error())
	}
	if s == nil {
		return nil, cred, false, fmt.Errorf("credential %q: no credential store configured", cred)
	}
	c, err := s.CredentialGet(ctx, cred)
	if errors.Is(err, ErrNotFound) {
		return nil, cred, false, NotFoundf("credential %q not found in the credential store (create it with POST /credentials)", cred)
	}
	if errors.Is(err, ErrNotGranted) {
		return nil, cred, false, err // names the credential and the rule
	}
	if err != nil {
		return nil, cred, false, fmt.Errorf("credential %q: %w", cred, err)
	}
	kind, _ := NormalizeKind(c.Kind)
	if kind == "" {
		kind = KindSecret
	}
	if declKind != "" && declKind != kind {
		return nil, cred, false, invalidf("declared kind %s but credential %q is %s", declKind, cred, kind)
	}
	if ps := kindProblems(kind, c.Data); len(ps) > 0 {
		return nil, cred, false, invalidf("credential %q: %s", cred, strings.Join(ps, "; "))
	}
	data, _ := jsonx.Clone(c.Data).(map[string]any)
	return build(kind, SourceStore, data), cred, false, nil
}

// build returns the resolved entry; it takes ownership of data (a fresh
// copy) and adds the derived fields to it.
func build(kind, source string, data map[string]any) map[string]any {
	out := data
	if out == nil {
		out = map[string]any{}
	}
	switch kind {
	case KindHTTPBearer:
		tok, _ := firstString(data, "token", "access_token")
		out["token"] = tok
		out[FieldHeaders] = withHeader(data[FieldHeaders], "Authorization", "Bearer "+tok)
	case KindHTTPBasic:
		user, _ := firstString(data, "username", "user")
		pass, _ := data["password"].(string)
		out["username"] = user
		out[FieldHeaders] = withHeader(data[FieldHeaders], "Authorization",
			"Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	case KindHTTPHeader:
		h, _ := headerFields(data)
		out[FieldHeaders] = h
	}
	out[FieldKind] = kind
	out[FieldSource] = source
	return out
}

// withHeader returns a copy of the headers mapping h (when it is one) with
// name set to value.
func withHeader(h any, name, value string) map[string]any {
	out := map[string]any{}
	if hm, ok := h.(map[string]any); ok {
		for k, v := range hm {
			if !strings.EqualFold(k, name) {
				out[k] = v
			}
		}
	}
	out[name] = value
	return out
}

// truthy is Python truthiness plus the words Jinja2 prints for false
// values (template.Truthy's rule for text results).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "", "false", "none", "null", "0":
			return false
		}
		return true
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
