package dsl

// This file computes the static fan-out/reduce joins (Step.JoinOf) with
// NoETL's planner rule (noetl/core/dsl/engine/planner.py,
// build_fanout_reduce_plan, and the orchestrator's barrier in noetl/server
// orchestrate-core build_incoming_arcs):
//
//   - a fan-out is a step whose next is inclusive with two or more distinct
//     target steps;
//   - a reduce step is a step with more than one upstream step (a step
//     with an arc to it), where an upstream u of t does not count when t
//     reaches u again through arcs (a loop back-edge, which would wait for
//     itself), nor when the entry step does not reach u (it never runs);
//   - the joins of a fan-out are the reduce steps found by walking arcs
//     from its targets and stopping at the first reduce step of each path;
//     a join waits for all of its counted upstream steps (JoinOf).
//
// Every arc counts, whatever its guard or event (as in the planner), so a
// join may wait for an upstream branch that is not taken: Step.JoinOf
// documents how the engine decides that such a branch can no longer
// arrive.

// computeJoins sets Step.JoinOf on every join step (and clears it
// elsewhere). It tolerates arcs to unknown steps (they are ignored).
func (p *Playbook) computeJoins() {
	n := newNet(p)
	size := len(n.steps)
	for _, s := range n.steps {
		s.JoinOf = nil
	}
	if size == 0 {
		return
	}
	// targets[i]: distinct target steps of step i, in arc order.
	targets := make([][]int, size)
	for i := range n.steps {
		seen := map[int]bool{}
		for _, e := range n.edges[i] {
			if !seen[e.to] {
				seen[e.to] = true
				targets[i] = append(targets[i], e.to)
			}
		}
	}
	reach := func(from int) []bool {
		r := make([]bool, size)
		stack := append([]int(nil), targets[from]...)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if r[v] {
				continue
			}
			r[v] = true
			stack = append(stack, targets[v]...)
		}
		return r
	}
	live := make([]bool, size)
	if entry, ok := n.index[p.EntryStep()]; ok {
		live = reach(entry)
		live[entry] = true
	}
	// upstream[t]: counted upstream steps of t (only steps with two or
	// more live upstreams can be reduce steps, so only those pay for the
	// back-edge walk).
	upstream := make([][]int, size)
	for u := range n.steps {
		if !live[u] {
			continue
		}
		for _, x := range targets[u] {
			upstream[x] = append(upstream[x], u)
		}
	}
	for t := range n.steps {
		if len(upstream[t]) < 2 {
			continue
		}
		fromT := reach(t)
		kept := upstream[t][:0]
		for _, u := range upstream[t] {
			if !fromT[u] {
				kept = append(kept, u)
			}
		}
		upstream[t] = kept
	}
	reduce := make([]bool, size)
	for t := range n.steps {
		reduce[t] = len(upstream[t]) > 1
	}
	for f, s := range n.steps {
		if s.Next == nil || s.Next.Mode != "inclusive" || len(targets[f]) < 2 {
			continue
		}
		visited := make([]bool, size)
		stack := append([]int(nil), targets[f]...)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if visited[v] {
				continue
			}
			visited[v] = true
			if reduce[v] {
				if n.steps[v].JoinOf == nil {
					for _, u := range upstream[v] {
						n.steps[v].JoinOf = append(n.steps[v].JoinOf, n.steps[u].Name)
					}
				}
				continue
			}
			stack = append(stack, targets[v]...)
		}
	}
}

// isJoin reports whether step i of the net is a join.
func (n *net) isJoin(i int) bool { return len(n.steps[i].JoinOf) > 0 }
