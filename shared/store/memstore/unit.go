package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// CompleteUnit implements Store: a step unit's lease check, checkpoint
// and release, or an iteration's end and its lane marker, hold the
// store's lock together (one commit); the loop's completion follows
// (store.FinishLoop).
func (m *Memory) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	if err := store.CheckUnit(p); err != nil {
		return store.UnitCompletion{}, err
	}
	if p.Iteration == nil {
		return m.completeStep(ctx, p)
	}
	res, err := m.completeIteration(ctx, p)
	if err != nil || res.Canceled || res.Held || !p.Iteration.LaneDone {
		return res, err
	}
	return res, store.FinishLoop(ctx, m, p, &res)
}

func (m *Memory) completeStep(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e := m.doc(p.ExecutionID)
	if p.Holder != "" {
		d, ok := e.units[p.Unit]
		if !ok || p.LeaseVersion != strconv.FormatInt(d.Version, 10) {
			// Firestore reads the lease unless the caller's version is
			// still the lease's (its commit's precondition checks it).
			mt.Read(1)
		}
		if !ok || d.Holder != p.Holder {
			return store.UnitCompletion{}, store.ErrLeaseLost
		}
	}
	cp := *p.Checkpoint
	cp.ExecutionID = p.ExecutionID
	res, err := m.checkpointLocked(ctx, cp)
	if err != nil {
		return store.UnitCompletion{}, err
	}
	if p.Holder != "" {
		mt.Delete(1)
		delete(e.units, p.Unit)
	}
	out := store.UnitCompletion{Checkpoint: res}
	if n := p.Next; n != nil && res.Applied {
		// The continued unit's lease, in the same commit (the lock).
		if next := n.Unit(); next != "" {
			if _, held := e.units[next]; !held {
				mt.Write(1)
				l := m.newLease(n.Params(p.ExecutionID, next))
				e.units[next] = l
				out.NextLeased, out.NextLeaseVersion = true, strconv.FormatInt(l.Version, 10)
			}
		}
	}
	return out, nil
}

// completeIteration ends the record (IterationEnd's rules) and marks the
// lane done with it.
func (m *Memory) completeIteration(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	it := p.Iteration
	end := it.End
	b, err := json.Marshal(end.Record)
	if err != nil {
		return store.UnitCompletion{}, fmt.Errorf("store: encode iteration: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e := m.doc(p.ExecutionID)
	if len(it.Group) > 0 {
		return m.completeGroupLocked(p, e, mt)
	}
	its := e.iter(end.LoopKey)
	cur := its[end.Record.Index]
	if end.Holder != "" {
		mt.Read(1)
	}
	lane := func() {
		if !it.LaneDone {
			return
		}
		mt.Write(1)
		if e.lanes[end.LoopKey] == nil {
			e.lanes[end.LoopKey] = map[int]bool{}
		}
		e.lanes[end.LoopKey][it.Lane] = true
	}
	var res *store.DLQResolution
	if cur != nil {
		switch {
		case cur.status == string(types.StatusCanceled):
			return store.UnitCompletion{Canceled: true}, nil
		case cur.status != string(types.StatusRunning):
			lane() // ended by an earlier run: its follow-up goes on
			return store.UnitCompletion{}, nil
		}
		if id, parked := store.ParkedBy(cur.holder); parked {
			r := end.Resolution(id)
			res = &r
		} else if end.Holder == "" && cur.holder != "" && cur.expires.After(end.Now) {
			return store.UnitCompletion{Held: true}, nil // its holder ends it
		} else if end.Holder != "" && cur.holder != end.Holder {
			return store.UnitCompletion{}, store.ErrLeaseLost
		}
	}
	mt.Write(1)
	m.size(fmt.Sprintf("executions/%s/loops/%s/iterations/%d", p.ExecutionID, end.LoopKey, end.Record.Index), b)
	its[end.Record.Index] = &memIter{status: string(end.Record.Status), data: b}
	if res != nil {
		mt.Write(1)
		m.dlqResolveLocked(*res)
	}
	if end.Record.Status == types.StatusCanceled {
		return store.UnitCompletion{First: true, Canceled: true}, nil
	}
	lane()
	return store.UnitCompletion{First: true}, nil
}

// completeGroupLocked commits End with its Group as one group document
// (a Create: one already there is left as it is) and the lane's marker.
func (m *Memory) completeGroupLocked(p store.CompleteUnitParams, e *memExec, mt meter.Scope) (store.UnitCompletion, error) {
	it := p.Iteration
	key := it.End.LoopKey
	recs := it.GroupRecords()
	id := store.GroupID(recs)
	if e.groups[key] == nil {
		e.groups[key] = map[string]map[int][]byte{}
	}
	var res store.UnitCompletion
	if e.groups[key][id] == nil {
		g := make(map[int][]byte, len(recs))
		var all []byte
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				return store.UnitCompletion{}, fmt.Errorf("store: encode iteration: %w", err)
			}
			g[r.Index] = b
			all = append(all, b...)
		}
		mt.Write(1)
		m.size(fmt.Sprintf("executions/%s/loops/%s/iteration_groups/%s", p.ExecutionID, key, id), all)
		e.groups[key][id] = g
		res.First = true
	}
	if it.LaneDone {
		mt.Write(1)
		if e.lanes[key] == nil {
			e.lanes[key] = map[int]bool{}
		}
		e.lanes[key][it.Lane] = true
	}
	return res, nil
}
