package engine

import (
	"fmt"
	"slices"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// Fan-out/reduce joins (dsl.Step.JoinOf; NoETL's fan-in barrier). A step
// that Load marked as the join of an inclusive fan-out runs once for all
// its incoming branches instead of once per arriving token: an arc to it
// from one of its JoinOf steps parks the token in State.Joins, and the
// join is scheduled (once) when every JoinOf step has either sent its
// token or can no longer send one — it is not running, scheduled or
// queued, and no running, scheduled or queued step (nor another waiting
// join) can reach it through arcs. The parked tokens' args and step
// variables are merged in JoinOf order (later wins). A token from a step
// outside JoinOf enters the join as an ordinary token. When nothing is
// active any more, every waiting join fires (in workflow order), so two
// joins that wait on each other cannot wedge the execution.

// JoinWait is a join's parked tokens (State.Joins[step]), in arrival order.
type JoinWait struct {
	Arrived []Token `json:"arrived"`
}

// joinAbsorb parks a token bound for a join; it reports whether it did
// (then the caller schedules nothing).
func (t *transition) joinAbsorb(name string, args, vars map[string]any, from string, fromRun int) bool {
	step := t.e.PB.Step(name)
	if step == nil || len(step.JoinOf) == 0 || t.firing == name || !slices.Contains(step.JoinOf, from) {
		return false
	}
	if t.st.Joins == nil {
		t.st.Joins = map[string]*JoinWait{}
	}
	w := t.st.Joins[name]
	if w == nil {
		w = &JoinWait{}
		t.st.Joins[name] = w
	}
	w.Arrived = append(w.Arrived, Token{Args: args, Vars: vars, From: from, FromRun: fromRun})
	return true
}

// checkJoins fires every waiting join that is ready (JoinReady), in
// workflow order; with force, every waiting join.
func (t *transition) checkJoins(force bool) {
	if len(t.st.Joins) == 0 {
		return
	}
	for _, s := range t.e.PB.Workflow {
		w := t.st.Joins[s.Name]
		if w == nil {
			continue
		}
		if !force && !JoinReady(t.e.PB, t.st, s) {
			continue
		}
		delete(t.st.Joins, s.Name)
		args, vars, from, fromRun := mergeJoin(s, w)
		t.firing = s.Name
		err := t.schedule(s.Name, args, vars, from, fromRun)
		t.firing = ""
		if err != nil {
			t.st.Failures = append(t.st.Failures, fmt.Sprintf("join %s: %v", s.Name, err))
		}
	}
	if len(t.st.Joins) == 0 {
		t.st.Joins = nil
	}
}

// mergeJoin merges a join's parked tokens in JoinOf order (later wins);
// the entry is attributed to the last arrival.
func mergeJoin(step *dsl.Step, w *JoinWait) (args, vars map[string]any, from string, fromRun int) {
	for _, up := range step.JoinOf {
		for _, tok := range w.Arrived {
			if tok.From != up {
				continue
			}
			for k, v := range tok.Args {
				if args == nil {
					args = map[string]any{}
				}
				args[k] = v
			}
			for k, v := range tok.Vars {
				if vars == nil {
					vars = map[string]any{}
				}
				vars[k] = v
			}
		}
	}
	last := w.Arrived[len(w.Arrived)-1]
	return args, vars, last.From, last.FromRun
}

// JoinReady reports whether the join step may run now: each of its JoinOf
// steps has parked a token, or can no longer send one (see the package
// comment above). Pure: it reads the state and the playbook's arcs.
func JoinReady(pb *dsl.Playbook, st *State, join *dsl.Step) bool {
	w := st.Joins[join.Name]
	arrived := map[string]bool{}
	if w != nil {
		for _, tok := range w.Arrived {
			arrived[tok.From] = true
		}
	}
	var live map[string]bool
	for _, up := range join.JoinOf {
		if arrived[up] {
			continue
		}
		if live == nil {
			live = liveSteps(pb, st, join.Name)
		}
		if live[up] {
			return false
		}
	}
	return true
}

// liveSteps is the set of steps that may still run: the active ones
// (scheduled, running, or with queued tokens), the other joins with parked
// tokens, and every step reachable from those through arcs (any event),
// without expanding the join itself.
func liveSteps(pb *dsl.Playbook, st *State, join string) map[string]bool {
	live := map[string]bool{}
	var queue []string
	add := func(n string) {
		if !live[n] {
			live[n] = true
			queue = append(queue, n)
		}
	}
	for _, s := range pb.Workflow {
		ss := st.Steps[s.Name]
		if ss != nil && (ss.Status == types.StatusScheduled || ss.Status == types.StatusRunning || len(ss.Pending) > 0) {
			add(s.Name)
		}
		if w := st.Joins[s.Name]; w != nil && s.Name != join && len(w.Arrived) > 0 {
			add(s.Name)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == join {
			continue
		}
		s := pb.Step(n)
		if s == nil || s.Next == nil {
			continue
		}
		for _, a := range s.Next.Arcs {
			add(a.Step)
		}
	}
	return live
}
