package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// StateMaxBytes bounds an execution document (its state JSON plus the
// playbook source): Firestore refuses documents over 1 MiB (1,048,576
// bytes); 900,000 leaves room for the document's other fields (README "Security"
// item 8).
const StateMaxBytes = 900_000

// ErrKindLimit is the error kind of a step or execution failed by a size
// limit.
const ErrKindLimit = types.ErrKindLimit

// ForcedOffloader stores a value in the results tier whatever its size
// (results.Store.OffloadForced); Control.Results implements it in
// production.
type ForcedOffloader interface {
	OffloadForced(ctx context.Context, coords types.ResultCoords, v any) (any, error)
}

// stateSize is the size of an execution document: its state JSON and its
// playbook source.
func stateSize(st *engine.State, source string) (int, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return 0, fmt.Errorf("control: encode state: %w", err)
	}
	return len(b) + len(source), nil
}

// FitState keeps an execution document under StateMaxBytes after a
// transition (README "Security"), so the checkpoint never fails (or retries)
// on Firestore's 1 MiB limit:
//
//  1. the largest step results still inline move to the results tier, one
//     at a time, largest first, until the document fits (each keeps a
//     result reference with its extracted block, as a large task result
//     does: NoETL result storage RFC);
//  2. if it still does not fit (a huge ctx, arc args, step scope), the
//     execution fails at once (engine Stop, error kind "limit", a message
//     naming the limit), its pending units are dropped, and the large
//     values are moved out of the document (ctx, arc args and step vars to
//     the results tier, or dropped when there is none) so the failure
//     itself can be written.
//
// out is the transition's output (its commands are dropped when the
// execution fails). Errors are the results tier's (transient) or an
// unencodable state.
func (c *Control) FitState(ctx context.Context, e *engine.Engine, st *engine.State, source string, out *engine.Output) error {
	size, err := stateSize(st, source)
	if err != nil || size <= StateMaxBytes {
		return err
	}
	f, _ := c.Results.(ForcedOffloader)
	if f != nil {
		type entry struct {
			step string
			n    int
		}
		var big []entry
		for k, v := range st.Results {
			if isRef(v) {
				continue
			}
			b, _ := json.Marshal(v)
			big = append(big, entry{k, len(b)})
		}
		sort.Slice(big, func(i, j int) bool { return big[i].n > big[j].n || big[i].n == big[j].n && big[i].step < big[j].step })
		for _, en := range big {
			if size <= StateMaxBytes || en.n < 64 {
				break
			}
			run := 0
			if ss := st.Steps[en.step]; ss != nil {
				run = ss.Run
			}
			ref, err := f.OffloadForced(ctx, types.ResultCoords{ExecutionID: st.ExecutionID, Step: en.step, Frame: run, Attempt: 0}, st.Results[en.step])
			if err != nil {
				return fmt.Errorf("control: move the result of %s out of the execution document: %w", en.step, err)
			}
			if ref == nil {
				continue
			}
			if st.LastStep == en.step {
				st.Result = ref
			}
			st.Results[en.step] = ref
			c.log().Warn("execution document over its size limit: a step result moved to the results tier", "execution_id", st.ExecutionID, "step", en.step, "bytes", en.n, "limit", StateMaxBytes)
			if size, err = stateSize(st, source); err != nil {
				return err
			}
		}
	}
	if size <= StateMaxBytes {
		return nil
	}
	msg := fmt.Sprintf("the execution document is %d bytes, over the %d-byte limit of a Firestore document (1 MiB): its ctx, arc args or step scope are too large (large values belong in step results, which move to the results tier)", size, StateMaxBytes)
	c.log().Error("execution failed: document over its size limit", "execution_id", st.ExecutionID, "bytes", size, "limit", StateMaxBytes)
	if err := c.shrink(ctx, f, st); err != nil {
		return err
	}
	stop, _ := e.Stop(st, types.Event{}, engine.StopReason{Status: engine.ExecFailed, Kind: ErrKindLimit, Message: msg}, c.now())
	out.Events = append(out.Events, stop.Events...)
	out.Commands, out.Loops = stop.Commands, nil
	return nil
}

// shrink moves the execution's free-form values out of its document: ctx
// (to the results tier when there is one, else dropped), every step's
// args, vars and queued tokens and an inline final result (dropped), and a
// workload that is still too large (moved) — what is left is the
// execution's shape, which fits.
func (c *Control) shrink(ctx context.Context, f ForcedOffloader, st *engine.State) error {
	move := func(name string, v any) (any, error) {
		if f == nil {
			return map[string]any{"dropped": "over the execution document's size limit"}, nil
		}
		ref, err := f.OffloadForced(ctx, types.ResultCoords{ExecutionID: st.ExecutionID, Step: "_state." + name}, v)
		if err != nil {
			return nil, fmt.Errorf("control: move %s out of the execution document: %w", name, err)
		}
		return ref, nil
	}
	if len(st.Ctx) > 0 {
		ref, err := move("ctx", st.Ctx)
		if err != nil {
			return err
		}
		st.Ctx = map[string]any{"$moved": ref}
	}
	for _, ss := range st.Steps {
		ss.Args, ss.Vars, ss.Pending = nil, nil, nil
	}
	if !isRef(st.Result) {
		st.Result = nil
	}
	if size, err := stateSize(st, ""); err == nil && size > StateMaxBytes/2 && len(st.Workload) > 0 {
		// A child execution's workload (the api bounds the others).
		ref, err := move("workload", st.Workload)
		if err != nil {
			return err
		}
		st.Workload = map[string]any{"$moved": ref}
	}
	return nil
}

func isRef(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["$ref"]
	return ok
}
