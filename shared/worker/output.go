package worker

import (
	"context"
	"maps"
	"strconv"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// InlineHardMax is the inline budget of a result whose output.store asks
// for the inline tier: larger results still go to the results tier, since
// the execution document (Firestore, 1 MiB) must hold every inline result.
const InlineHardMax = 512 << 10

// limitOffloader is implemented by result stores that take a per-result
// inline budget (results.Store.OffloadLimit).
type limitOffloader interface {
	OffloadLimit(ctx context.Context, c types.ResultCoords, v any, limit int) (any, error)
}

// optsOffloader is implemented by result stores that take a result's
// storage settings (results.Store.OffloadWith: budget, compression, ttl).
type optsOffloader interface {
	OffloadWith(ctx context.Context, c types.ResultCoords, v any, opts results.OffloadOptions) (any, error)
}

// storeOptions are the storage settings of the unit's result from its
// output block (NoETL DSL spec output.store): the inline budget (-1: the
// engine's), Feather compression and ttl (the validator checked both).
func (u *unit) storeOptions() results.OffloadOptions {
	opts := results.OffloadOptions{Limit: -1}
	out := u.outputBlock()
	if out == nil {
		return opts
	}
	if out.InlineMaxBytes != nil {
		opts.Limit = max(*out.InlineMaxBytes, 0)
	}
	if st := out.Store; st != nil {
		if st.Tier == dsl.TierInline {
			opts.Limit = InlineHardMax
		}
		if st.Compression != "none" {
			opts.Compression = st.Compression
		}
		opts.TTL, _ = dsl.ParseTTL(st.TTL)
	}
	return opts
}

// outputBlock is the output block that governs the unit's result
// (NoETL DSL spec "DSL v2 names", output.store / output.select): the step's own
// output, else its last task's; for a loop iteration only the last task's
// (a loop step's output applies to the loop's {results}).
func (u *unit) outputBlock() *dsl.Output {
	var last *dsl.Output
	if n := len(u.step.Tasks); n > 0 {
		last = u.step.Tasks[n-1].Output
	}
	if u.cmd.Iteration != nil {
		return last
	}
	if u.step.Output != nil {
		return u.step.Output
	}
	return last
}

// offloadResult stores the unit's result in the results tier when its
// output block says so (output.store tier and inline_max_bytes; the
// engine's default budget otherwise) and returns the reference to carry
// instead (nil: keep inline). The fields of output.select are kept inline
// in the reference (engine.SelectedKey), so that templates and routing
// read them without loading the payload (engine/views.go).
func (u *unit) offloadResult(ctx context.Context, coords types.ResultCoords, result any) (any, error) {
	out := u.outputBlock()
	opts := u.storeOptions()
	var ref any
	var err error
	if oo, ok := u.w.Results.(optsOffloader); ok {
		ref, err = oo.OffloadWith(ctx, coords, result, opts)
	} else if lo, ok := u.w.Results.(limitOffloader); ok && opts.Limit >= 0 {
		ref, err = lo.OffloadLimit(ctx, coords, result, opts.Limit)
	} else {
		ref, err = u.w.Results.Offload(ctx, coords, result)
	}
	if err != nil || ref == nil || out == nil || len(out.Select) == 0 {
		return ref, err
	}
	return WithSelected(ref, result, out.Select), nil
}

// WithSelected returns a copy of the reference map ref with the selected
// fields of result under engine.SelectedKey ({as: value}; a path that
// does not resolve is left out). ref that is not a map is returned as is.
func WithSelected(ref, result any, sel []dsl.OutputSelect) any {
	m, ok := ref.(map[string]any)
	if !ok {
		return ref
	}
	picked := map[string]any{}
	for _, s := range sel {
		if v, ok := PathValue(result, s.Path); ok {
			picked[s.As] = v
		}
	}
	c := maps.Clone(m)
	c[engine.SelectedKey] = picked
	return c
}

// PathValue returns the value at a dotted path with [i] indexes inside v
// (output.select paths: "data.items[0].id"; a leading "$." is dropped);
// ok is false when a segment is missing or of the wrong shape.
func PathValue(v any, path string) (any, bool) {
	path = strings.TrimPrefix(strings.TrimPrefix(path, "$"), ".")
	if path == "" {
		return v, true
	}
	cur := v
	for _, seg := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(seg, "[")
		if name != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[name]; !ok {
				return nil, false
			}
		}
		for idx != "" {
			num, rest, found := strings.Cut(idx, "]")
			if !found {
				return nil, false
			}
			i, err := strconv.Atoi(strings.TrimSpace(num))
			l, ok := cur.([]any)
			if err != nil || !ok {
				return nil, false
			}
			if i < 0 {
				i += len(l)
			}
			if i < 0 || i >= len(l) {
				return nil, false
			}
			cur = l[i]
			idx = strings.TrimPrefix(rest, "[")
		}
	}
	return cur, true
}

// accumulate folds a task attempt's outcome into the task's
// output.accumulate variable (engine.Accumulate), a pipeline variable
// later tasks and the task's own policy read by name.
func (u *unit) accumulate(task *dsl.Task, out types.Outcome) {
	if task.Output == nil || task.Output.Accumulate == nil {
		return
	}
	name := engine.AccumulateName(task)
	v, changed := engine.Accumulate(task.Output.Accumulate, u.cur.Vars[name], out)
	if !changed {
		return
	}
	if u.cur.Vars == nil {
		u.cur.Vars = map[string]any{}
	}
	u.cur.Vars[name] = v
}
