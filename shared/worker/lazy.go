package worker

// Lazy results (README "Architecture"): a step result stored in the results tier is
// loaded only when this unit's step reads more of it than its
// reference. What the step reads is found in its definition — every
// template of its input, its tasks (with the workbook entries they call)
// and its cursor, and the identifiers of its python code (which reads
// the `context` global) — once per unit; results read only through their
// reference fields ({{ big._ref }}, {{ big._store }}, output.select
// fields) stay unloaded. A loaded result is cached per instance by the
// results store (results.Cache, bounded in bytes).

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// stepReads returns, for each name the unit's step reads, how it reads
// it (template.Uses: attributes, "" for whole; python code identifiers
// are whole reads).
func (u *unit) stepReads() map[string][]string {
	reads := map[string][]string{}
	add := func(name, attr string) {
		for _, a := range reads[name] {
			if a == attr {
				return
			}
		}
		reads[name] = append(reads[name], attr)
	}
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value, key string, depth int)
	walk = func(v reflect.Value, key string, depth int) {
		if depth > 64 || !v.IsValid() {
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			walk(v.Elem(), key, depth+1)
		case reflect.Interface:
			walk(v.Elem(), key, depth+1)
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < v.NumField(); i++ {
				if t.Field(i).IsExported() {
					walk(v.Field(i), strings.ToLower(t.Field(i).Name), depth+1)
				}
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				k := ""
				if it.Key().Kind() == reflect.String {
					k = it.Key().String()
				}
				walk(it.Value(), k, depth+1)
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), key, depth+1)
			}
		case reflect.String:
			s := v.String()
			if uses, err := template.Uses(s); err == nil {
				for name, attrs := range uses {
					for _, a := range attrs {
						add(name, a)
					}
				}
			}
			if key == "code" { // python code reads `context` by name
				for _, id := range identifiers(s) {
					add(id, "")
				}
			}
		}
	}
	s := u.step
	walk(reflect.ValueOf(s.Input), "", 0)
	for _, t := range s.Tasks {
		walk(reflect.ValueOf(t), "", 0)
		if t != nil && t.Kind == "workbook" && u.pb != nil {
			name := t.Workbook
			if name == "" {
				name, _ = t.Config["name"].(string)
			}
			walk(reflect.ValueOf(u.pb.Workbook[name]), "", 0)
		}
	}
	if s.Loop != nil {
		walk(reflect.ValueOf(s.Loop.Cursor), "", 0)
	}
	return reads
}

// identifiers returns the identifier-like words of s.
func identifiers(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

// needsLoad reports whether reads of a stored result go beyond the
// fields its unloaded view already has (the reference, its extracted
// block, output.select fields, _ref, _store); "data" is the payload.
func needsLoad(view any, attrs []string) bool {
	m, _ := view.(map[string]any)
	for _, a := range attrs {
		if a == "" || a == "data" {
			return true
		}
		if _, has := m[a]; !has {
			return true
		}
	}
	return false
}

// resolveResults builds the step-result views of the unit's scope and
// loads the stored results the step reads (see the file comment).
// Every reference in scope is authorized first (results.Authorize: the
// unit's execution, its parent, its children). Reading a result that is
// gone fails the step once with error kind result_lost naming the result,
// one changed or corrupt with kind artifact, one too large to load whole
// with kind result_too_large (resultFailure).
func (u *unit) resolveResults(ctx context.Context) error {
	u.results = engine.ResultViews(u.pb, u.st.Results, nil) // hook (h-conf): step-result views (engine/views.go)
	u.loaded = u.st.Results
	if u.w.Results == nil || len(u.st.Results) == 0 {
		return nil
	}
	reads := u.stepReads()
	// A step is visible under its name and its output.as.
	names := map[string][]string{}
	for name := range u.st.Results {
		names[name] = []string{name}
	}
	if u.pb != nil {
		for name := range u.st.Results {
			if st := u.pb.Step(name); st != nil && st.Output != nil && st.Output.As != "" {
				names[name] = append(names[name], st.Output.As)
			}
		}
	}
	var out map[string]any
	for name, v := range u.st.Results {
		if !results.IsRef(v) {
			continue
		}
		// Ownership first, for every reference in scope whether the step
		// loads it or not (results by ownership): a reference of another
		// execution (a hand-made "$ref" in a step result) fails the step
		// with kind forbidden before anything is read.
		if err := results.Authorize(ctx, v); err != nil {
			return fmt.Errorf("worker: result of %s: %w", name, err)
		}
		load := false
		for _, n := range names[name] {
			if attrs, read := reads[n]; read && needsLoad(u.results[n], attrs) {
				load = true
			}
		}
		if !load {
			continue
		}
		r, err := u.w.Results.Resolve(ctx, v)
		if err != nil {
			return fmt.Errorf("worker: resolve result of %s: %w", name, err)
		}
		if out == nil {
			out = make(map[string]any, len(u.st.Results))
			for k, x := range u.st.Results {
				out[k] = x
			}
		}
		out[name] = r
		u.fetched = append(u.fetched, name)
	}
	if out == nil {
		return nil
	}
	resolved := map[string]any{}
	for _, name := range u.fetched {
		resolved[name] = out[name]
	}
	u.results = engine.ResultViews(u.pb, u.st.Results, resolved) // hook (h-conf): views of the loaded results
	u.loaded = out
	return nil
}

// resultFailure turns an error reading a stored result into the step's
// failure, when it is one no retry cures: the reference is another
// execution's (forbidden, results by ownership), the object is there but
// changed or undecodable (artifact: it no longer matches its sha256),
// the object is gone (result_lost, NoETL result storage RFC "repair": named by its URI,
// no redelivery storm), or it is too large to load whole.
func resultFailure(err error) (map[string]any, bool) {
	switch {
	case errors.Is(err, results.ErrForbidden):
		return map[string]any{"kind": string(types.ErrKindForbidden), "message": err.Error()}, true
	case errors.Is(err, results.ErrLost): // gone, or changed (ErrDigest, ErrFormat)
		return map[string]any{"kind": string(types.ErrKindResultLost), "message": err.Error()}, true
	case errors.Is(err, results.ErrTooLarge):
		return map[string]any{"kind": string(types.ErrKindResultTooLarge), "message": err.Error()}, true
	}
	return nil, false
}

// tableStore is the results tier's streaming side (results.Store).
type tableStore interface {
	NewSink(ctx context.Context, c types.ResultCoords, opts results.OffloadOptions) *results.Sink
}

// withSinks lets the task's tool stream a table result into the tier
// (results.SinkFrom): the table goes to the coordinates of the task's
// result with the output block's store settings.
func (u *unit) withSinks(ctx context.Context, task *dsl.Task) context.Context {
	ts, ok := u.w.Results.(tableStore)
	if !ok {
		return ctx
	}
	c := u.cmd
	coords := types.ResultCoords{ExecutionID: c.ExecutionID, Step: c.Step, Frame: c.StepRun, Row: iterOr0(c.Iteration), Attempt: u.cur.Attempt}
	if len(u.step.Tasks) > 1 || u.cur.Jumps > 0 {
		coords.Step = c.Step + "." + task.Name + "." + itoa(u.cur.Jumps)
	}
	opts := u.storeOptions()
	return results.WithSinks(ctx, func() *results.Sink { return ts.NewSink(ctx, coords, opts) })
}
