package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// ItemsInlineMax is the largest JSON encoding of a loop's items kept in
// its plan document; larger collections go to the results tier and the
// plan keeps a reference (no Firestore document grows with the loop).
const ItemsInlineMax = 64 << 10

// ItemInlineMax is the largest item carried inside an iteration's Cloud
// Task body; a larger one is read from the plan by execute (ItemRef).
const ItemInlineMax = 16 << 10

// prepareLoops moves the items of large new loop plans to the results tier
// and strips large items from the first iterations' commands.
func (c *Control) prepareLoops(ctx context.Context, executionID string, out *engine.Output) error {
	for i := range out.Loops {
		p := &out.Loops[i]
		c.plans.put(executionID, *p)
		if c.Results == nil {
			continue
		}
		b, err := json.Marshal(p.Items)
		if err != nil {
			return fmt.Errorf("control: encode loop items: %w", err)
		}
		if len(b) <= ItemsInlineMax {
			continue
		}
		ref, err := c.Results.Offload(ctx, types.ResultCoords{ExecutionID: executionID, Step: p.Step + ".items", Frame: p.Run}, p.Items)
		if err != nil {
			return fmt.Errorf("control: store loop items: %w", err)
		}
		if ref != nil {
			p.ItemsRef, p.Items = ref, nil
		}
	}
	for i := range out.Commands {
		stripItem(&out.Commands[i])
	}
	return nil
}

// stripItem drops an iteration command's item when it is too large for a
// Cloud Task body; execute reads it from the plan.
func stripItem(cmd *types.Command) {
	if cmd.Iteration == nil || cmd.Item == nil {
		return
	}
	if b, err := json.Marshal(cmd.Item); err == nil && len(b) <= ItemInlineMax {
		return
	}
	cmd.Item, cmd.ItemRef = nil, true
}

// planCache keeps loop plans (immutable once written) per instance.
type planCache struct {
	mu sync.Mutex
	m  map[string]*engine.LoopPlan
}

const planCacheMax = 256

func (pc *planCache) key(executionID, loopKey string) string { return executionID + "/" + loopKey }

func (pc *planCache) get(executionID, loopKey string) *engine.LoopPlan {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.m[pc.key(executionID, loopKey)]
}

func (pc *planCache) put(executionID string, p engine.LoopPlan) {
	if _, _, table := engine.StoredTable(p.ItemsRef); p.Items == nil && p.ItemsRef != nil && !table {
		return // cached once resolved
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil {
		pc.m = map[string]*engine.LoopPlan{}
	}
	if len(pc.m) >= planCacheMax {
		for k := range pc.m { // evict an arbitrary entry
			delete(pc.m, k)
			break
		}
	}
	cp := p
	pc.m[pc.key(executionID, p.Key())] = &cp
}

// Plan returns a loop run's plan with its items loaded (cached per
// instance: plans never change).
func (c *Control) Plan(ctx context.Context, executionID, loopKey string) (*engine.LoopPlan, error) {
	if p := c.plans.get(executionID, loopKey); p != nil {
		return p, nil
	}
	p, err := c.Store.LoopGet(ctx, executionID, loopKey)
	if err != nil {
		return nil, err
	}
	if _, rows, table := engine.StoredTable(p.ItemsRef); table && p.Items == nil {
		// A stored table is iterated where it is (Item reads one row).
		if rows != p.Total {
			return nil, errs.New(errs.Internal, "control: loop %s plan has a table of %d rows for %d iterations", loopKey, rows, p.Total)
		}
		c.plans.put(executionID, *p)
		return p, nil
	}
	if p.ItemsRef != nil {
		if c.Results == nil {
			return nil, errs.New(errs.Internal, "control: loop %s keeps its items in the results tier but no results store is configured", loopKey)
		}
		v, err := c.Results.Resolve(readerFor(ctx, executionID), p.ItemsRef)
		if err != nil {
			return nil, fmt.Errorf("control: load loop items: %w", err)
		}
		items, ok := v.([]any)
		if !ok {
			return nil, errs.New(errs.Internal, "control: loop %s items resolve to %T, not a list", loopKey, v)
		}
		p.Items, p.ItemsRef = items, nil
	}
	if len(p.Items) != p.Total {
		return nil, errs.New(errs.Internal, "control: loop %s plan has %d items for %d iterations", loopKey, len(p.Items), p.Total)
	}
	c.plans.put(executionID, *p)
	return p, nil
}

// rowReader reads one row of a stored table (results.Store.Row).
type rowReader interface {
	Row(ctx context.Context, ref any, i int) (any, error)
}

// Item returns iteration idx's item of a loop run: the plan's element,
// or, for a loop over a stored table (README "Architecture"), row idx read from the
// table (only its record batch is fetched), for a reader that may load it
// (readerFor). Errors: the plan's; a results-tier read error
// (results.ErrLost for a table that is gone, results.ErrForbidden for
// another execution's).
func (c *Control) Item(ctx context.Context, executionID, loopKey string, idx int) (any, error) {
	plan, err := c.Plan(ctx, executionID, loopKey)
	if err != nil {
		return nil, err
	}
	if idx < 0 || idx >= plan.Total {
		return nil, errs.New(errs.Internal, "control: loop %s has %d iterations, not %d", loopKey, plan.Total, idx)
	}
	if plan.Items != nil {
		return plan.Items[idx], nil
	}
	rr, ok := c.Results.(rowReader)
	if !ok {
		return nil, errs.New(errs.Internal, "control: loop %s iterates a stored table but the results store cannot read rows", loopKey)
	}
	return rr.Row(readerFor(ctx, executionID), plan.ItemsRef, idx)
}

// readerFor returns ctx reading results for executionID (results by
// ownership): the Reader ctx carries when it is that execution's (the
// worker's, which also admits the execution's parent and children), else
// one that admits the execution's own results only.
func readerFor(ctx context.Context, executionID string) context.Context {
	if r, ok := results.ReaderOf(ctx); ok && r.Execution == executionID {
		return ctx
	}
	return results.WithReader(ctx, results.Reader{Execution: executionID})
}

// IterationEnded carries out what follows the end of a loop iteration
// whose record is already stored (a redelivery that finds it ended, a
// record ended by a watchdog): CompleteIteration with that record.
func (c *Control) IterationEnded(ctx context.Context, cmd types.Command, rec engine.IterationRecord) error {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return err
	}
	_, err := c.CompleteIteration(ctx, IterationEnd{Cmd: cmd, Record: rec})
	return err
}

// loopDoneEvent is the loop.done event of a loop run whose assembled
// result is result, that result offloaded to the results tier when large
// (only the reference then travels in the event), with the profile of its
// iteration records recs (engine.ProfileOf), their ctx patches (merged
// into the execution's ctx with loop.done) and total, the iterations run.
func (c *Control) loopDoneEvent(ctx context.Context, executionID string, plan *engine.LoopPlan, recs []engine.IterationRecord, result any, clock int64, total int) (types.Event, error) {
	res := result
	if c.Results != nil {
		ref, err := c.Results.Offload(ctx, types.ResultCoords{ExecutionID: executionID, Step: plan.Step, Frame: plan.Run}, result)
		if err != nil {
			return types.Event{}, fmt.Errorf("control: store loop result: %w", err)
		}
		if ref != nil {
			res = ref
		}
	}
	ev := engine.LoopDoneEvent(executionID, *plan, res, clock, c.now())
	ev.Payload = history.Encode(history.LoopDone{Result: res, Total: total, Profile: engine.ProfileOf(recs), Ctx: engine.LoopCtxPatch(recs)})
	return ev, nil
}

// applyLoopEnd applies a loop run's ending event (loop.done, or the
// loop.failed of fail_fast) under the step run's end outbox id, so that
// it is applied once however many lanes or deliveries get here.
func (c *Control) applyLoopEnd(ctx context.Context, executionID string, plan *engine.LoopPlan, ev types.Event) error {
	_, err := c.Apply(ctx, ApplyParams{ExecutionID: executionID, Event: ev, OutboxID: EndOutboxID(executionID, plan.Step, plan.Run), Events: []types.Event{ev}})
	return err
}
