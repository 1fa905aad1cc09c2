package http

import (
	"context"
	"errors"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// applyAuth returns the spec Exec sends: an `auth` credential name
// (NoETL v2 playbooks name credentials without declaring a
// keychain) or a mapping with "headers" adds those headers under the
// task's own (the worker already turns keychain entries into headers and
// drops auth). An empty mapping, as NoETL writes `auth: {}`, adds nothing.
// An unknown credential or one without
// request headers is kind "config"; a failing store kind "credentials".
func (t *Tool) applyAuth(ctx context.Context, cfg toolspec.HTTP) (toolspec.HTTP, *types.Outcome) {
	a := cfg.Auth
	if a == nil {
		return cfg, nil
	}
	var entry map[string]any
	switch x := a.(type) {
	case string:
		name := strings.TrimSpace(x)
		if name == "" {
			return cfg, nil
		}
		if t.creds == nil {
			o := conf.ConfigError("http task: auth %q names a credential but no credential store is configured", name)
			return cfg, &o
		}
		kc, err := credentials.Resolve(ctx, t.creds, []any{map[string]any{"name": "auth", "credential": name}}, nil)
		if err != nil {
			if errors.Is(err, credentials.ErrNotGranted) {
				o := conf.Fail(types.ErrKindForbidden, false, "http task: auth: %v", err)
				return cfg, &o
			}
			if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) {
				o := conf.ConfigError("http task: auth: %v", err)
				return cfg, &o
			}
			o := conf.FailCode(errs.CodeOf(err), types.ErrKindCredentials, "http task: auth: %v", err)
			return cfg, &o
		}
		entry, _ = kc["auth"].(map[string]any)
		if _, has := entry["headers"]; !has {
			o := conf.ConfigError("http task: credential %q (kind %v) gives no request headers; use an http_bearer, http_basic or http_header credential", name, entry["kind"])
			return cfg, &o
		}
	default:
		m, isMap := conf.Map(a)
		if !isMap {
			o := conf.ConfigError("http task: `auth` must be a credential name or a mapping with headers, got %T", a)
			return cfg, &o
		}
		entry = m
	}
	h, _ := conf.Map(entry["headers"])
	out := cfg
	out.Auth = nil
	if len(h) == 0 {
		return out, nil
	}
	merged := map[string]any{}
	for k, v := range h {
		merged[k] = v
	}
	if th := cfg.Headers; th != nil {
		for k, v := range th {
			for mk := range merged {
				if strings.EqualFold(mk, k) {
					delete(merged, mk)
				}
			}
			merged[k] = v
		}
	}
	out.Headers = merged
	return out, nil
}
