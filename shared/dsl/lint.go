package dsl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Severities of warnings (Problem.Severity).
const (
	// SeverityWarning marks a finding that is probably a bug (the playbook
	// still loads and runs).
	SeverityWarning = "warning"
	// SeverityInfo marks a finding that may well be intended but deserves
	// a look.
	SeverityInfo = "info"
)

// Kinds of Lint findings (Problem.Code).
const (
	// LintUnreachable: a step no arc path from the entry step leads to
	// (warning; the final step is exempt).
	LintUnreachable = "unreachable"
	// LintNoTerminal: a step from which no path reaches a terminal step,
	// a step whose success ends its branch (warning; livelock).
	LintNoTerminal = "no-terminal"
	// LintUnguardedCycle: a cycle of arcs that always fire (no when
	// guard, and nothing ahead of them under exclusive routing), so a
	// token that enters it never leaves (warning).
	LintUnguardedCycle = "unguarded-cycle"
	// LintJumpCycle: a task pipeline whose jumps trap it: from some
	// reachable task no rule leads out of the pipeline (no break, fail,
	// bounded retry or continue past the last task) (warning).
	LintJumpCycle = "jump-cycle"
	// LintNoDefaultArc: an exclusive step whose every success arc has a
	// when and none is a catch-all or the complement of another, so its
	// branch ends silently when no condition matches (info).
	LintNoDefaultArc = "no-default-arc"
	// LintFanIn: branches of an inclusive fan-out converge on a step that
	// is not its join (Step.JoinOf), which then runs once per arriving
	// branch (warning). A join step is not reported: it runs once.
	LintFanIn = "fan-in"
	// LintDeadArc: an arc never taken on success because an earlier arc
	// of the exclusive step always matches (warning).
	LintDeadArc = "dead-arc"
	// LintShadowedName: a step name that hides a template name or is also
	// a workload key (warning; also reported by Load).
	LintShadowedName = "shadowed-name"
	// LintEmptyStep: a step with neither tool, next nor set (warning;
	// also reported by Load).
	LintEmptyStep = "empty-step"
	// LintUnknownName: a template reads a name that no scope of the
	// playbook defines, so it renders empty (warning; also reported by
	// Load).
	LintUnknownName = "unknown-name"
)

// Lint analyses the workflow as a Petri net (steps are transitions, arcs
// carry the tokens) and each step's task pipeline, and returns warnings
// (Severity SeverityWarning or SeverityInfo, Code one of the Lint*
// constants) sorted by line. It never fails and never modifies p; it is
// meant for a valid playbook (Load's result) but tolerates one built in Go
// (unknown arc or jump targets are ignored).
//
// The result is complete on its own, for `noetl lint FILE` to print: it
// starts from p.Warnings (Load's deprecation and shape warnings, which
// include the unreachable/shadowed/empty findings below) and adds the
// analyses, without duplicates.
//
// Terms: a success arc listens to the step's success (on: "", step.done,
// loop.done or any); an arc is unguarded when it has no when, when is
// constant true, or it only tests the success event (event.name ==
// 'loop.done' on a loop step, 'step.done' otherwise); a terminal step is
// one with no live success arc (its success ends its branch; arcs on
// step.failed alone do not count); under exclusive routing a success arc
// after an unguarded one is dead (never taken on success).
//
// Findings:
//   - LintUnreachable: no arc path from the entry step (Playbook.EntryStep)
//     leads to the step (executor.spec.final_step is exempt: it runs
//     after quiescence);
//   - LintNoTerminal: the step is reachable but no path of live arcs
//     (success or failure) leads from it to a terminal step: every path
//     loops forever, ending at best silently when no condition matches
//     (e.g. a → b → a with no exit);
//   - LintUnguardedCycle: a cycle of forced arcs — unguarded success arcs
//     that are the first success arc of an exclusive step or any arc of
//     an inclusive one: the cycle can never terminate;
//   - LintJumpCycle: in a task pipeline (continue → next task, jump → its
//     target, retry → next task or failure once the attempts are spent,
//     break/fail → out; no policy: continue, its implicit error → fail not
//     counting as a way out; a policy without else: continue when nothing
//     matches) some task reachable from the first one cannot reach the end
//     of the pipeline; reported on each jump rule of such a task ("jump
//     cycle without a break or bounded attempt");
//   - LintNoDefaultArc (info): an exclusive step whose success arcs all
//     have a when, without a catch-all and without an obvious complement
//     pair (x / not x, a == b / a != b);
//   - LintFanIn: an inclusive step with two or more success arcs whose
//     branches (followed over live success arcs, not beyond a join) meet
//     again at a step that is not a join (Step.JoinOf, NoETL's planner
//     rule): it runs once per arriving branch;
//   - LintDeadArc: an arc shadowed by an earlier unguarded arc of an
//     exclusive step;
//   - LintShadowedName, LintEmptyStep, LintUnknownName: as reported by
//     Load.
func Lint(p *Playbook) []Problem {
	if p == nil {
		return nil
	}
	out := append([]Problem(nil), p.Warnings...)
	out = append(out, p.lint()...)
	n := newNet(p)
	out = append(out, n.deadArcs()...)
	out = append(out, n.noTerminal()...)
	out = append(out, n.unguardedCycles()...)
	out = append(out, n.noDefaultArc()...)
	out = append(out, n.fanIn()...)
	out = append(out, n.jumpCycles()...)
	for i := range out {
		if out[i].Severity == "" {
			out[i].Severity = SeverityWarning
		}
	}
	out = dedup(out)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// scopeNames are template names a step result would shadow (NoETL DSL spec
// "Templates": a finished step's result is visible by the step's name).
var scopeNames = map[string]bool{
	"workload": true, "ctx": true, "iter": true, "args": true, "execution_id": true,
	"keychain": true, "event": true, "outcome": true, "_prev": true, "_task": true,
	"_attempt": true, "loop_index": true, "input_data": true,
	"input": true, "output": true, "step": true,
}

// lint returns the warnings Load adds for a valid playbook: steps
// unreachable from the entry step, step names that shadow template names or
// workload keys, steps that do nothing. Lint reports them too.
func (p *Playbook) lint() []Problem {
	var out []Problem
	warn := func(code, path string, line int, format string, args ...any) {
		if l, ok := p.lines[path]; ok {
			line = l
		}
		out = append(out, Problem{Line: line, Path: path, Message: fmt.Sprintf(format, args...), Severity: SeverityWarning, Code: code})
	}
	reached := newNet(p).reachable()
	for i, s := range p.Workflow {
		if s == nil {
			continue
		}
		sp := stepPath(s, i)
		if !reached[s.Name] && s.Name != p.FinalStep {
			warn(LintUnreachable, sp+".step", s.Line, "step %q is not reachable from the entry step %q (no arc leads to it)", s.Name, p.EntryStep())
		}
		if scopeNames[s.Name] {
			warn(LintShadowedName, sp+".step", s.Line, "step name %q shadows the template name %s: its result will not be visible by name", s.Name, s.Name)
		} else if _, ok := p.Workload[s.Name]; ok {
			warn(LintShadowedName, sp+".step", s.Line, "step name %q is also a workload key: the bare name {{ %s }} becomes ambiguous (use workload.%s)", s.Name, s.Name, s.Name)
		}
		if len(s.Tasks) == 0 && s.Next == nil && len(s.Set) == 0 && s.Name != p.FinalStep {
			warn(LintEmptyStep, sp, s.Line, "step %q has neither tool nor next: it does nothing", s.Name)
		}
	}
	out = append(out, p.unknownNames()...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// ---- the workflow net -----------------------------------------------------

// net is the workflow graph: one node per named step (first definition
// wins), one edge per arc whose target exists.
type net struct {
	p     *Playbook
	steps []*Step
	paths []string
	index map[string]int
	edges [][]edge // by source node, in arc order
}

// edge is one arc between two known steps.
type edge struct {
	to      int
	arc     *Arc
	path    string
	success bool // listens to the step's success
	failure bool // listens to step.failed
	guarded bool // has a real when guard (see unguarded)
	dead    bool // never taken on success (after an unguarded arc, exclusive)
	forced  bool // always taken on success
}

func newNet(p *Playbook) *net {
	n := &net{p: p, index: map[string]int{}}
	for i, s := range p.Workflow {
		if s == nil || s.Name == "" {
			continue
		}
		if _, dup := n.index[s.Name]; dup {
			continue
		}
		n.index[s.Name] = len(n.steps)
		n.steps = append(n.steps, s)
		n.paths = append(n.paths, stepPath(s, i))
	}
	n.edges = make([][]edge, len(n.steps))
	for i, s := range n.steps {
		if s.Next == nil {
			continue
		}
		inclusive := s.Next.Mode == "inclusive"
		sawUnguarded, sawSuccess := false, false
		for k, a := range s.Next.Arcs {
			if a == nil {
				continue
			}
			to, ok := n.index[a.Step]
			if !ok {
				continue
			}
			ap := arcPath(a, n.paths[i], k)
			e := edge{to: to, arc: a, path: ap}
			e.success, e.failure = a.On.OnSuccess(), a.On.OnFailure()
			if e.success {
				e.guarded = !unguarded(a.When, s)
				e.dead = !inclusive && sawUnguarded && !e.failure
				e.forced = !e.guarded && (inclusive || !sawSuccess)
				if !e.guarded {
					sawUnguarded = true
				}
				sawSuccess = true
			}
			n.edges[i] = append(n.edges[i], e)
		}
	}
	return n
}

// unguarded reports whether an arc's when is always true on the step's
// success event: empty, a constant true, or a test of that event's name.
func unguarded(when string, s *Step) bool {
	w := strings.TrimSpace(when)
	if w == "" {
		return true
	}
	expr, ok := exprOf(w)
	if !ok {
		return false
	}
	expr = squeeze(expr)
	switch strings.ToLower(expr) {
	case "true", "1", "(true)":
		return true
	}
	ev := string(ArcOnStepDone)
	if s.Loop != nil {
		ev = string(ArcOnLoopDone)
	}
	return expr == "event.name == '"+ev+"'" || expr == `event.name == "`+ev+`"`
}

// squeeze collapses runs of blanks outside string literals into one space
// and trims the result.
func squeeze(s string) string {
	var b strings.Builder
	var quote byte
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			b.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			} else if c == quote {
				quote = 0
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		if c == '\'' || c == '"' {
			quote = c
		}
		b.WriteByte(c)
	}
	return b.String()
}

// reachable returns the names of the steps some arc path from the entry
// step leads to (every arc counts, whatever its guard or event).
func (n *net) reachable() map[string]bool {
	out := map[string]bool{}
	start, ok := n.index[n.p.EntryStep()]
	if !ok {
		return out
	}
	seen := make([]bool, len(n.steps))
	queue := []int{start}
	seen[start] = true
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		out[n.steps[i].Name] = true
		for _, e := range n.edges[i] {
			if !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	return out
}

// live reports whether e can carry a token (on success or on failure).
func (e edge) live() bool { return e.failure || (e.success && !e.dead) }

// terminal reports whether step i's success ends its branch (no live
// success arc).
func (n *net) terminal(i int) bool {
	for _, e := range n.edges[i] {
		if e.success && !e.dead {
			return false
		}
	}
	return true
}

func (n *net) add(out *[]Problem, severity, code, path string, line int, format string, args ...any) {
	if l := lineIn(n.p.lines, path); l > 0 {
		line = l
	}
	*out = append(*out, Problem{Line: line, Path: path, Message: fmt.Sprintf(format, args...), Severity: severity, Code: code})
}

func (n *net) deadArcs() []Problem {
	var out []Problem
	for i, s := range n.steps {
		var first *edge
		for k := range n.edges[i] {
			e := &n.edges[i][k]
			if e.success && !e.guarded && first == nil && !e.dead {
				first = e
				continue
			}
			if e.dead {
				n.add(&out, SeverityWarning, LintDeadArc, e.path, e.arc.Line, "arc to %q is never taken on success: the earlier arc to %q of step %q has no when guard and exclusive routing takes the first match (move this arc before it, or give that arc a when)", e.arc.Step, first.arc.Step, s.Name)
			}
		}
	}
	return out
}

// spread marks in mark every node reachable in adj from the nodes of
// queue (already marked), breadth first.
func spread(mark []bool, queue []int, adj [][]int) {
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range adj[v] {
			if !mark[w] {
				mark[w] = true
				queue = append(queue, w)
			}
		}
	}
}

func (n *net) noTerminal() []Problem {
	var out []Problem
	ok := make([]bool, len(n.steps))
	rev := make([][]int, len(n.steps))
	var queue []int
	for i := range n.steps {
		for _, e := range n.edges[i] {
			if e.live() {
				rev[e.to] = append(rev[e.to], i)
			}
		}
		if n.terminal(i) {
			ok[i] = true
			queue = append(queue, i)
		}
	}
	spread(ok, queue, rev)
	reached := n.reachable()
	for i, s := range n.steps {
		if ok[i] || !reached[s.Name] {
			continue
		}
		n.add(&out, SeverityWarning, LintNoTerminal, n.paths[i]+".next", s.Line, "step %q can never reach a terminal step (a step whose success has no outgoing arc): every path from it loops back (livelock), ending at best silently when no when matches; add an exit arc to a terminal step", s.Name)
	}
	return out
}

func (n *net) unguardedCycles() []Problem {
	var out []Problem
	forced := make([][]int, len(n.steps))
	for i := range n.steps {
		for _, e := range n.edges[i] {
			if e.forced {
				forced[i] = append(forced[i], e.to)
			}
		}
	}
	for _, comp := range sccs(len(n.steps), forced) {
		in := map[int]bool{}
		for _, v := range comp {
			in[v] = true
		}
		cyclic := len(comp) > 1
		if !cyclic {
			for _, w := range forced[comp[0]] {
				if w == comp[0] {
					cyclic = true
				}
			}
		}
		if !cyclic {
			continue
		}
		// Walk one cycle from the earliest step of the component.
		start := comp[0]
		for _, v := range comp {
			if v < start {
				start = v
			}
		}
		names := []string{n.steps[start].Name}
		pos := map[int]int{start: 0}
		cur := start
		for {
			next := -1
			for _, w := range forced[cur] {
				if in[w] {
					next = w
					break
				}
			}
			if next < 0 {
				break
			}
			names = append(names, n.steps[next].Name)
			if at, seen := pos[next]; seen {
				names = names[at:]
				break
			}
			pos[next] = len(names) - 1
			cur = next
		}
		n.add(&out, SeverityWarning, LintUnguardedCycle, n.paths[start]+".next", n.steps[start].Line, "unconditional cycle %s: each of these arcs fires on success without a when guard (and ahead of any other arc under exclusive routing), so once entered the cycle never terminates; guard one of them with a when, or put an exit arc before it", strings.Join(names, " → "))
	}
	return out
}

// sccs returns the strongly connected components of a graph (Tarjan),
// each as a list of nodes.
func sccs(size int, adj [][]int) [][]int {
	index := make([]int, size)
	low := make([]int, size)
	on := make([]bool, size)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, w := range adj[v] {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			out = append(out, comp)
		}
	}
	for v := 0; v < size; v++ {
		if index[v] < 0 {
			visit(v)
		}
	}
	return out
}

func (n *net) noDefaultArc() []Problem {
	var out []Problem
	for i, s := range n.steps {
		if s.Next == nil || s.Next.Mode == "inclusive" {
			continue
		}
		var whens []string
		catchAll := false
		for _, e := range n.edges[i] {
			if !e.success {
				continue
			}
			if !e.guarded {
				catchAll = true
				break
			}
			w, ok := exprOf(strings.TrimSpace(e.arc.When))
			if !ok {
				w = e.arc.When
			}
			whens = append(whens, squeeze(w))
		}
		if catchAll || len(whens) == 0 || hasComplement(whens) {
			continue
		}
		n.add(&out, SeverityInfo, LintNoDefaultArc, n.paths[i]+".next", s.Line, "no default arc: every arc of step %q has a when, so the branch ends silently if no condition matches; add a last arc without when if that is not intended", s.Name)
	}
	return out
}

var cmpRE = regexp.MustCompile(`^(.+?)\s*(==|!=)\s*(.+)$`)

// hasComplement reports whether two of the conditions are obviously
// complementary: x and not x / not (x), or a == b and a != b.
func hasComplement(ws []string) bool {
	for i, a := range ws {
		for j, b := range ws {
			if i == j {
				continue
			}
			if b == "not "+a || b == "not ("+a+")" {
				return true
			}
			ma, mb := cmpRE.FindStringSubmatch(a), cmpRE.FindStringSubmatch(b)
			if ma != nil && mb != nil && strings.Count(a, "==")+strings.Count(a, "!=") == 1 && strings.Count(b, "==")+strings.Count(b, "!=") == 1 &&
				ma[1] == mb[1] && ma[3] == mb[3] && ma[2] != mb[2] {
				return true
			}
		}
	}
	return false
}

func (n *net) fanIn() []Problem {
	var out []Problem
	for s, st := range n.steps {
		if st.Next == nil || st.Next.Mode != "inclusive" {
			continue
		}
		var fan []edge
		for _, e := range n.edges[s] {
			if e.success {
				fan = append(fan, e)
			}
		}
		if len(fan) < 2 {
			continue
		}
		// reach[b] = steps the branch of fan-out arc b visits.
		reach := make([]map[int]bool, len(fan))
		for b, e := range fan {
			reach[b] = map[int]bool{e.to: true}
			queue := []int{e.to}
			for len(queue) > 0 {
				v := queue[0]
				queue = queue[1:]
				if v == s || n.isJoin(v) {
					continue // a join merges the branches into one token
				}
				for _, f := range n.edges[v] {
					if f.success && !f.dead && !reach[b][f.to] {
						reach[b][f.to] = true
						queue = append(queue, f.to)
					}
				}
			}
		}
		// An incoming edge carries the branches that reach its source.
		type inEdge struct{ branches []int }
		incoming := make([][]inEdge, len(n.steps))
		for b, e := range fan {
			incoming[e.to] = append(incoming[e.to], inEdge{[]int{b}})
		}
		for v := range n.steps {
			if v == s || n.isJoin(v) {
				continue
			}
			var bs []int
			for b := range fan {
				if reach[b][v] {
					bs = append(bs, b)
				}
			}
			if len(bs) == 0 {
				continue
			}
			for _, f := range n.edges[v] {
				if f.success && !f.dead {
					incoming[f.to] = append(incoming[f.to], inEdge{bs})
				}
			}
		}
		var targets []string
		for _, e := range fan {
			targets = append(targets, e.arc.Step)
		}
		for j := range n.steps {
			if n.isJoin(j) {
				continue
			}
			ins := incoming[j]
			join := false
			for x := 0; x < len(ins) && !join; x++ {
				for y := x + 1; y < len(ins) && !join; y++ {
					for _, b1 := range ins[x].branches {
						for _, b2 := range ins[y].branches {
							if b1 != b2 {
								join = true
							}
						}
					}
				}
			}
			if join {
				n.add(&out, SeverityWarning, LintFanIn, n.paths[s]+".next", st.Line, "inclusive fan-out of step %q (to %s): the branches converge on step %q, which is not a join of this fan-out and will run once per incoming branch; route the branches to distinct steps, or make the fan-out exclusive", st.Name, strings.Join(targets, ", "), n.steps[j].Name)
			}
		}
	}
	return out
}

// ---- task pipelines -------------------------------------------------------

// jumpCycles finds, per step, the tasks reachable from the first one that
// cannot reach the end of the pipeline, and reports their jump rules.
func (n *net) jumpCycles() []Problem {
	var out []Problem
	for i, s := range n.steps {
		tasks := s.Tasks
		size := len(tasks)
		if size == 0 {
			continue
		}
		exit := size
		label := map[string]int{}
		for k, t := range tasks {
			if t != nil {
				if _, dup := label[t.Name]; !dup {
					label[t.Name] = k
				}
			}
		}
		adj := make([][]int, size+1)
		for k, t := range tasks {
			next := k + 1 // == exit after the last task
			if t == nil || t.Policy == nil || len(t.Policy.Rules) == 0 {
				// Default policy: ok → continue. Its error → fail is not a
				// designed way out of a jump cycle.
				adj[k] = append(adj[k], next)
				continue
			}
			hasElse := false
			for _, r := range t.Policy.Rules {
				if r == nil {
					continue
				}
				if r.Else {
					hasElse = true
				}
				switch r.Then.Do {
				case "jump":
					if to, ok := label[r.Then.To]; ok {
						adj[k] = append(adj[k], to)
					} else {
						adj[k] = append(adj[k], exit) // fails at run time
					}
				case "break", "fail":
					adj[k] = append(adj[k], exit)
				case "retry":
					adj[k] = append(adj[k], next, exit)
				default:
					adj[k] = append(adj[k], next)
				}
			}
			if !hasElse {
				adj[k] = append(adj[k], next)
			}
		}
		// Tasks that can reach the exit.
		rev := make([][]int, size+1)
		for k := range adj {
			for _, w := range adj[k] {
				rev[w] = append(rev[w], k)
			}
		}
		escapes := make([]bool, size+1)
		escapes[exit] = true
		spread(escapes, []int{exit}, rev)
		// Tasks reachable from the first.
		seen := make([]bool, size+1)
		seen[0] = true
		spread(seen, []int{0}, adj)
		for k, t := range tasks {
			if t == nil || !seen[k] || escapes[k] || t.Policy == nil {
				continue
			}
			for r, rule := range t.Policy.Rules {
				if rule == nil || rule.Then.Do != "jump" {
					continue
				}
				rp := rulePath(t, rule, n.paths[i], k, r)
				n.add(&out, SeverityWarning, LintJumpCycle, thenPath(rule, rp)+".to", rule.Line, "jump cycle without a break or bounded attempt: in step %q, task %q jumps to %q and no task on the cycle has a rule that leaves the pipeline (do: break or fail, a bounded retry, a continue past the last task, or a guarded rule with no else); the pipeline can only stop at the engine's jump limit", s.Name, t.Name, rule.Then.To)
			}
		}
	}
	return out
}
