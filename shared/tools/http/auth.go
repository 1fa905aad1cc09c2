package http

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/tools/internal/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// applyAuth returns the configuration Exec sends: an `auth` credential name
// (NoETL v2 playbooks name credentials without declaring a
// keychain) or a mapping with "headers" adds those headers under the
// task's own (the worker already turns keychain entries into headers and
// drops auth). An empty mapping, as NoETL writes `auth: {}`, adds nothing.
// config itself is never modified. An unknown credential or one without
// request headers is kind "config"; a failing store kind "credentials".
func (t *Tool) applyAuth(ctx context.Context, cfg map[string]any) (map[string]any, *types.Outcome) {
	a, ok := cfg["auth"]
	if !ok || a == nil {
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
			return nil, &o
		}
		kc, err := credentials.Resolve(ctx, t.creds, []any{map[string]any{"name": "auth", "credential": name}}, nil)
		if err != nil {
			if errors.Is(err, credentials.ErrNotGranted) {
				o := conf.Fail(types.ErrKindForbidden, false, "http task: auth: %v", err)
				return nil, &o
			}
			if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) {
				o := conf.ConfigError("http task: auth: %v", err)
				return nil, &o
			}
			o := conf.FailCode(errs.CodeOf(err), "credentials", "http task: auth: %v", err)
			return nil, &o
		}
		entry, _ = kc["auth"].(map[string]any)
		if _, has := entry["headers"]; !has {
			o := conf.ConfigError("http task: credential %q (kind %v) gives no request headers; use an http_bearer, http_basic or http_header credential", name, entry["kind"])
			return nil, &o
		}
	default:
		m, isMap := conf.Map(a)
		if !isMap {
			o := conf.ConfigError("http task: `auth` must be a credential name or a mapping with headers, got %T", a)
			return nil, &o
		}
		entry = m
	}
	h, _ := conf.Map(entry["headers"])
	out := maps.Clone(cfg)
	delete(out, "auth")
	if len(h) == 0 {
		return out, nil
	}
	merged := map[string]any{}
	for k, v := range h {
		merged[k] = v
	}
	if th, ok := conf.Map(cfg["headers"]); ok {
		for k, v := range th {
			for mk := range merged {
				if strings.EqualFold(mk, k) {
					delete(merged, mk)
				}
			}
			merged[k] = v
		}
	}
	out["headers"] = merged
	return out, nil
}
