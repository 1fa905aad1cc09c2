// Package artifact implements the `artifact` and `result_fetch` task kinds
// (NoETL DSL spec "DSL v2 names": reading a payload from a reference is explicit,
// through a resolver tool): they turn a result reference of the results
// tier (NoETL result storage RFC §5, shared/results) back into the full value.
//
// The two kinds are NoETL's two spellings of one operation:
//
//	kind: artifact              kind: result_fetch
//	action: get                 ref: "{{ big_step._ref }}"
//	input:
//	  result_ref: "{{ start._ref }}"
package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Tool is the artifact / result_fetch task kind. It is safe for
// concurrent use when its results store is.
type Tool struct{ results *results.Store }

// New returns a tool reading references through rs (nil: every get fails
// with a config error naming the missing store).
func New(rs *results.Store) *Tool { return &Tool{results: rs} }

// Exec resolves one reference (tools.Adapt turns Exec into a tools.Tool).
// Its configuration decodes into toolspec.Artifact (Fetch's into
// toolspec.ResultFetch). The reference is read from, in order:
// args["result_ref"] (the task's `input:` after rendering), the spec's
// uri (ref, result_ref), args["ref"]:
//
//	action       get (default); put is a config error — results are stored
//	             by the worker when a step ends, never by a task
//	input.result_ref | uri | ref | result_ref
//	             the reference: the map Store.Offload returns ({"$ref":
//	             {...}, "extracted": ...}), its inner "$ref" map ({uri, key,
//	             format, bucket, ...}), or the physical key as a string
//	             ("gs://<bucket>/<key>" or "<key>", format from the .json /
//	             .feather extension)
//
// Result: the stored value itself (tabular results come back as a list of
// row mappings). A value that is not a reference (a result that stayed
// inline) is returned unchanged, so a playbook reads the same either way.
// A bare logical URI (noetl://<tenant>/<project>/results/...) is resolved
// from the URI alone (its key derived, NoETL result storage RFC §4). When the engine
// offers a sink (results.SinkFrom) a stored Feather table is copied
// through it batch by batch, never held whole: a small one comes back as
// its value, a large one as the reference of the copy (the task's own
// result).
//
// Only references of the task's own execution, its parent's or its
// children's load (results.Reader, set by the worker; a bare URI is
// checked before the tier is even asked whether it exists); the
// execution is read from the reference's key, and the object must match
// the sha256 the reference records.
//
// Errors: a malformed reference or another bucket are kind "config"; a
// reference of another execution (or an object that is no execution's
// result) is kind "forbidden"; a URI that names no stored result is kind
// "not_found"; an object that is gone is kind "result_lost" naming it; an
// object that is there but does not decode or does not match its sha256
// is kind "artifact"; one too large to load whole (without a sink)
// "result_too_large"; other store failures are kind "storage"
// (retryable).
func (t *Tool) Exec(ctx context.Context, args, config map[string]any, _ float64) types.Outcome {
	var spec toolspec.Artifact
	if err := toolspec.Decode(config, &spec); err != nil {
		return conf.ConfigError("%v", err)
	}
	return t.get(ctx, args, spec.Action, spec.URI)
}

// Fetch is the result_fetch kind: the artifact tool's get with its
// configuration decoded into toolspec.ResultFetch.
type Fetch struct{ *Tool }

// Exec resolves the reference of a result_fetch task (see Tool.Exec).
func (f Fetch) Exec(ctx context.Context, args, config map[string]any, _ float64) types.Outcome {
	var spec toolspec.ResultFetch
	if err := toolspec.Decode(config, &spec); err != nil {
		return conf.ConfigError("%v", err)
	}
	return f.get(ctx, args, spec.Action, spec.Ref)
}

// get resolves one reference: args' result_ref, else ref (the spec's),
// else args' ref.
func (t *Tool) get(ctx context.Context, args map[string]any, a string, specRef any) types.Outcome {
	if strings.TrimSpace(a) != "" && !strings.EqualFold(strings.TrimSpace(a), "get") {
		if strings.EqualFold(strings.TrimSpace(a), "put") {
			return conf.ConfigError("artifact task: action put is not supported: a step's result is stored by the engine when the step ends (output.store); read it back with action get")
		}
		return conf.ConfigError("artifact task: action %q is not supported (only get)", a)
	}
	ref, ok := reference(args, specRef)
	if !ok {
		return conf.ConfigError("artifact task: `input.result_ref` (or `ref`) is required")
	}
	v, err := normalise(ref)
	if err != nil {
		return conf.ConfigError("artifact task: %v", err)
	}
	uri, isURI := v.(string)
	if !isURI && !results.IsRef(v) {
		return types.Outcome{Status: types.StatusOK, Result: v}
	}
	if t.results == nil || t.results.Backend == nil {
		return conf.ConfigError("artifact task: no results store is configured")
	}
	var out any
	if isURI {
		v, err = t.results.ResolveURN(ctx, uri)
	}
	if err == nil {
		if sink, ok := results.SinkFrom(ctx); ok && isTable(v) {
			out, err = t.copy(ctx, v, sink)
		} else {
			out, err = t.results.Resolve(ctx, v)
		}
	}
	switch {
	case err == nil:
		return types.Outcome{Status: types.StatusOK, Result: out}
	case errors.Is(err, results.ErrForbidden):
		return conf.Fail(types.ErrKindForbidden, false, "artifact task: %v", err)
	case errors.Is(err, results.ErrLost): // gone, or changed (ErrDigest, ErrFormat)
		return conf.Fail(types.ErrKindResultLost, false, "artifact task: %v", err)
	case errors.Is(err, results.ErrFormat): // there and intact, but not what the task reads
		return conf.Fail(types.ErrKindArtifact, false, "artifact task: %v", err)
	case errors.Is(err, results.ErrTooLarge):
		return conf.Fail(types.ErrKindResultTooLarge, false, "artifact task: %v", err)
	case errors.Is(err, results.ErrBadRef), errors.Is(err, results.ErrBadURI):
		return conf.ConfigError("artifact task: %v", err)
	case errors.Is(err, results.ErrNotFound):
		return conf.Fail(types.ErrKindNotFound, false, "artifact task: %v", err)
	case errors.Is(ctx.Err(), context.Canceled):
		return conf.Fail(types.ErrKindCanceled, true, "artifact task canceled: %v", err)
	case ctx.Err() != nil:
		return conf.Fail(types.ErrKindTimeout, true, "artifact task timeout: %v", err)
	}
	return conf.Fail(types.ErrKindStorage, true, "artifact task: %v", err)
}

// reference finds the reference: the input's result_ref, else the
// spec's, else the input's ref.
func reference(args map[string]any, specRef any) (any, bool) {
	if v, ok := conf.Lookup(args, "result_ref"); ok {
		return v, true
	}
	if specRef != nil {
		return specRef, true
	}
	return conf.Lookup(args, "ref")
}

// normalise turns the accepted spellings into a results reference map (or
// returns a non-reference value unchanged).
func normalise(v any) (any, error) {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return nil, errors.New("the reference is empty (was the step's result externalised?)")
		}
		if strings.HasPrefix(s, "noetl://") {
			if _, err := results.ParseLogicalURI(s); err != nil {
				return nil, err
			}
			return s, nil // resolved from the URI alone (Exec)
		}
		ref := map[string]any{"uri": s}
		if rest, ok := strings.CutPrefix(s, "gs://"); ok {
			bucket, key, found := strings.Cut(rest, "/")
			if !found || bucket == "" || key == "" {
				return nil, fmt.Errorf("reference %q is not gs://<bucket>/<key>", s)
			}
			ref["bucket"], ref["key"] = bucket, key
		} else {
			ref["key"] = s
		}
		switch strings.ToLower(path.Ext(ref["key"].(string))) {
		case ".json":
			ref["format"] = results.FormatJSON
		case ".feather", ".arrow":
			ref["format"] = results.FormatFeather
		default:
			return nil, fmt.Errorf("reference %q: cannot tell the format (want a .json or .feather key)", s)
		}
		return map[string]any{results.RefKey: ref}, nil
	case map[string]any:
		if results.IsRef(x) {
			return x, nil
		}
		if _, hasKey := x["key"].(string); hasKey {
			if _, hasFormat := x["format"].(string); hasFormat {
				return map[string]any{results.RefKey: x}, nil
			}
		}
		return x, nil
	}
	return v, nil
}

// isTable reports whether a reference names a stored Feather table.
func isTable(v any) bool {
	m, _ := v.(map[string]any)
	inner, _ := m[results.RefKey].(map[string]any)
	f, _ := inner["format"].(string)
	return f == results.FormatFeather
}

// copy streams a stored table through the task's sink, one record batch
// at a time (its file metadata — a query result's other fields — kept).
func (t *Tool) copy(ctx context.Context, ref any, sink *results.Sink) (any, error) {
	tr, err := t.results.OpenTable(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if err := sink.Begin(tr.Schema(), tr.Meta()); err != nil {
		return nil, err
	}
	for {
		rec, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return sink.End()
		}
		if err != nil {
			sink.Abort()
			return nil, err
		}
		err = sink.Write(rec)
		rec.Release()
		if err != nil {
			sink.Abort()
			return nil, err
		}
	}
}
