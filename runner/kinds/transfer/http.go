package transfer

import (
	"context"
	"errors"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// httpKeys are the source keys passed to the http kind.
var httpKeys = []string{"url", "endpoint", "method", "headers", "params", "query", "json", "body", "data", "timeout"}

// fromHTTP fetches the source with the http kind, takes the list at
// data_path and emits it in chunks. It returns the number of records
// fetched, or the failure outcome (the http kind's, for the source; the
// target's, classified by the sink).
func (t *Tool) fromHTTP(rctx, parent context.Context, p plan, emit func([]string, []map[string]any) error, s *sink) (int64, *types.Outcome) {
	if t.opts.HTTP == nil {
		o := conf.ConfigError("transfer task: the http kind is not available")
		return 0, &o
	}
	req := map[string]any{}
	for _, k := range httpKeys {
		if v, ok := p.source[k]; ok {
			req[k] = v
		}
	}
	if m, ok := conf.String(req, "method"); ok && !strings.EqualFold(m, "GET") && !strings.EqualFold(m, "POST") {
		o := conf.ConfigError("transfer task: source.method must be GET or POST, got %q", m)
		return 0, &o
	}
	if a, ok := p.source["auth"]; ok && a != nil {
		h, o := t.authHeaders(rctx, a)
		if o != nil {
			return 0, o
		}
		merged := map[string]any{}
		for k, v := range h {
			merged[k] = v
		}
		if hm, ok := conf.Map(req["headers"]); ok {
			for k, v := range hm {
				merged[k] = v
			}
		}
		req["headers"] = merged
	}
	out := t.opts.HTTP.Exec(rctx, nil, req, 0)
	if out.Status != types.StatusOK {
		o := prefix(out, "transfer source")
		o.Result = nil
		return 0, &o
	}
	res, _ := out.Result.(map[string]any)
	data := res["data"]
	if dp, ok := conf.String(p.source, "data_path", "path", "json_path"); ok {
		for _, part := range strings.Split(strings.TrimPrefix(strings.TrimSpace(dp), "$."), ".") {
			if part == "" {
				continue
			}
			m, isMap := data.(map[string]any)
			if !isMap {
				o := conf.Fail(types.ErrKindTransfer, false, "transfer source: data_path %q: %q is not inside an object", dp, part)
				return 0, &o
			}
			data = m[part]
		}
	}
	return emitList(rctx, parent, p, data, "the response (at data_path)", emit, s)
}

// emitList emits a decoded source value — a list of objects, or one
// object — in chunks of p.chunk; what names it in errors. It returns the
// records emitted, or the failure outcome.
func emitList(rctx, parent context.Context, p plan, data any, what string, emit func([]string, []map[string]any) error, s *sink) (int64, *types.Outcome) {
	var list []any
	switch x := data.(type) {
	case []any:
		list = x
	case map[string]any:
		list = []any{x}
	case nil:
	default:
		o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %s must be a JSON array of objects or one object, got %T", what, data)
		return 0, &o
	}
	recs := make([]map[string]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			o := conf.Fail(types.ErrKindTransfer, false, "transfer source: record %d is %T, not a JSON object", i, e)
			return 0, &o
		}
		recs = append(recs, m)
	}
	var cols []string
	if len(recs) > 0 {
		cols = recordColumns(recs[0])
	}
	for start := 0; start < len(recs); start += p.chunk {
		end := min(start+p.chunk, len(recs))
		if err := emit(cols, recs[start:end]); err != nil {
			o, _ := s.classify(parent, rctx, err)
			return 0, &o
		}
	}
	return int64(len(recs)), nil
}

// authHeaders resolves an http source's auth: a credential name (an
// http_bearer, http_basic or http_header credential) or a mapping holding
// "headers".
func (t *Tool) authHeaders(ctx context.Context, a any) (map[string]any, *types.Outcome) {
	var entry map[string]any
	switch x := a.(type) {
	case string:
		if t.opts.Credentials == nil {
			o := conf.ConfigError("transfer task: source.auth %q names a credential but no credential store is configured", x)
			return nil, &o
		}
		kc, err := credentials.Resolve(ctx, t.opts.Credentials, []any{map[string]any{"name": "source", "credential": x}}, nil)
		if err != nil {
			if errors.Is(err, credentials.ErrNotGranted) {
				o := conf.Fail(types.ErrKindForbidden, false, "transfer task: source.auth: %v", err)
				return nil, &o
			}
			if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) {
				o := conf.ConfigError("transfer task: source.auth: %v", err)
				return nil, &o
			}
			o := conf.FailCode(errs.CodeOf(err), types.ErrKindCredentials, "transfer task: source.auth: %v", err)
			return nil, &o
		}
		entry, _ = kc["source"].(map[string]any)
	default:
		m, ok := conf.Map(a)
		if !ok {
			o := conf.ConfigError("transfer task: source.auth must be a credential name or a mapping with headers, got %T", a)
			return nil, &o
		}
		entry = m
	}
	h, ok := conf.Map(entry["headers"])
	if !ok {
		o := conf.ConfigError("transfer task: source.auth gives no request headers (use an http_bearer, http_basic or http_header credential)")
		return nil, &o
	}
	return h, nil
}
