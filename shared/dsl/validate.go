package dsl

import (
	"fmt"
	"strings"
)

// Validate checks the model (also one built or edited in Go) against the
// DSL's cross-reference and value rules and returns every problem found
// (nil when valid): apiVersion/kind/metadata.name, a non-empty workflow,
// unique identifier step names and a step named "start", known task kinds
// with their required fields (http url, python code|code_b64, postgres
// command|sql|query, playbook path, workbook name of an existing workbook
// entry), unique task labels per step, policy rules (then.do, retry
// attempts ≥ 1, backoff, delay ≥ 0, jump targets in the same step, admit
// allow), loop in/iterator/mode, next mode, arc targets and `on`, and
// set_ctx in parallel loops (needs loop.spec.allow_set_ctx: true).
// Problems carry the YAML line when the playbook came from Load.
func (p *Playbook) Validate() []Problem {
	return sortProblems(p.validate())
}

func (p *Playbook) validate() []Problem {
	v := &validator{p: p}
	v.run()
	return v.problems
}

type validator struct {
	p        *Playbook
	problems []Problem
	steps    map[string]*Step
}

func (v *validator) add(path string, line int, format string, args ...any) {
	// The line of the path's key, else of its nearest recorded ancestor;
	// the object's own line for a playbook built in Go.
	ln := lineIn(v.p.lines, path)
	if ln == 0 {
		ln = line
	}
	v.problems = append(v.problems, Problem{Line: ln, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) run() {
	p := v.p
	switch p.APIVersion {
	case APIVersion:
	case "":
		v.add("apiVersion", 0, "apiVersion is required (apiVersion: %s)", APIVersion)
	default:
		v.add("apiVersion", 0, "unsupported apiVersion %q: use %s", p.APIVersion, APIVersion)
	}
	switch p.Kind {
	case "Playbook":
	case "":
		v.add("kind", 0, "kind is required (kind: Playbook)")
	default:
		v.add("kind", 0, "kind must be Playbook, got %q", p.Kind)
	}
	if p.Metadata.Name == "" {
		v.add("metadata.name", 0, "metadata.name is required")
	}
	if len(p.Workflow) == 0 {
		v.add("workflow", 0, "workflow is required: a non-empty list of steps")
	}

	v.steps = map[string]*Step{}
	for i, s := range p.Workflow {
		if s == nil {
			continue
		}
		sp := stepPath(s, i)
		np := sp + ".step"
		switch {
		case s.Name == "":
			v.add(np, s.Line, "step name is required (step: <name>)")
			continue
		case !isIdent(s.Name):
			v.add(np, s.Line, "step name %q must be an identifier (letters, digits, _; not starting with a digit) so templates can read its result as {{ %s }}", s.Name, "<name>")
		}
		if first, dup := v.steps[s.Name]; dup {
			v.add(np, s.Line, "duplicate step name %q (first defined at line %d)", s.Name, first.Line)
			continue
		}
		v.steps[s.Name] = s
	}
	if len(p.Workflow) > 0 && v.steps["start"] == nil {
		v.add("workflow", 0, "no step named \"start\": the workflow's entry step must be named start")
	}

	for _, name := range sortedKeys(p.Workbook) {
		t := p.Workbook[name]
		if t == nil {
			continue
		}
		tp := t.Path
		if tp == "" {
			tp = "workbook." + name
		}
		if t.Name != "" && t.Name != name {
			v.add(tp, t.Line, "workbook entry %q is stored under %q", t.Name, name)
		}
		v.task(t, tp, nil)
	}
	v.workbookCycles()

	for i, s := range p.Workflow {
		if s != nil {
			v.step(s, stepPath(s, i))
		}
	}
}

func stepPath(s *Step, i int) string {
	if s.Path != "" {
		return s.Path
	}
	return fmt.Sprintf("workflow[%d]", i)
}

func (v *validator) step(s *Step, sp string) {
	switch s.FailureMode {
	case "", "fail_fast", "best_effort":
	default:
		v.add(sp+".spec.policy.failure.mode", s.Line, "failure.mode must be fail_fast or best_effort, got %q", s.FailureMode)
	}
	if s.TimeoutS < 0 {
		v.add(sp+".spec.policy.lifecycle.timeout_s", s.Line, "lifecycle.timeout_s must be ≥ 0")
	}
	if s.Admit != nil {
		for k, r := range s.Admit.Rules {
			if r == nil {
				continue
			}
			rp := r.Path
			if rp == "" {
				rp = fmt.Sprintf("%s.spec.policy.admit.rules[%d]", sp, k)
			}
			v.ruleShape(r, rp)
			if r.Then.Allow == nil {
				v.add(thenPath(r, rp)+".allow", r.Line, "admit rules decide with then.allow: true|false")
			}
			if r.Then.Do != "" {
				v.add(thenPath(r, rp)+".do", r.Line, "admit rules only decide allow: true|false; do belongs to task policy")
			}
		}
	}
	if lp := s.Loop; lp != nil {
		path := lp.Path
		if path == "" {
			path = sp + ".loop"
		}
		line := lp.Line
		if lp.In == nil {
			v.add(path+".in", line, "loop.in is required: a template rendering to a list, or a list")
		}
		switch {
		case lp.Iterator == "":
			v.add(path+".iterator", line, "loop.iterator is required (the name each element is bound to: iter.<iterator>)")
		case !isIdent(lp.Iterator):
			v.add(path+".iterator", line, "loop.iterator %q must be an identifier", lp.Iterator)
		}
		switch lp.Mode {
		case "", "sequential", "parallel":
		default:
			v.add(path+".spec.mode", line, "loop mode must be sequential or parallel, got %q", lp.Mode)
		}
		if lp.MaxInFlight < 0 {
			v.add(path+".spec.max_in_flight", line, "max_in_flight must be at least 1")
		}
		if len(s.Tasks) == 0 {
			v.add(path, line, "a loop step needs tool: the tasks run for each element")
		}
	}

	labels := map[string]*Task{}
	for j, t := range s.Tasks {
		if t == nil {
			continue
		}
		tp := t.Path
		if tp == "" {
			tp = fmt.Sprintf("%s.tool[%d]", sp, j)
		}
		switch {
		case t.Name == "":
			v.add(tp+".name", t.Line, "task label is required")
		case !isIdent(t.Name):
			v.add(tp+".name", t.Line, "task label %q must be an identifier (letters, digits, _)", t.Name)
		}
		if first, dup := labels[t.Name]; dup && t.Name != "" {
			v.add(tp+".name", t.Line, "duplicate task label %q in step %q (first at line %d)", t.Name, s.Name, first.Line)
		} else {
			labels[t.Name] = t
		}
	}
	for j, t := range s.Tasks {
		if t == nil {
			continue
		}
		tp := t.Path
		if tp == "" {
			tp = fmt.Sprintf("%s.tool[%d]", sp, j)
		}
		v.task(t, tp, labels)
	}

	if s.Next != nil {
		switch s.Next.Mode {
		case "", "exclusive", "inclusive":
		default:
			v.add(sp+".next.spec.mode", s.Line, "next.spec.mode must be exclusive or inclusive, got %q", s.Next.Mode)
		}
		for k, a := range s.Next.Arcs {
			if a == nil {
				continue
			}
			ap := a.Path
			if ap == "" {
				ap = fmt.Sprintf("%s.next.arcs[%d]", sp, k)
			}
			switch {
			case a.Step == "":
				v.add(ap+".step", a.Line, "arc needs step: <target step name>")
			case v.steps[a.Step] == nil:
				v.add(ap+".step", a.Line, "arc to unknown step %q%s", a.Step, v.suggestStep(a.Step))
			}
			switch a.On {
			case "", "step.done", "step.failed", "loop.done", "any":
			default:
				v.add(ap+".on", a.Line, "arc on must be one of %s, got %q", strings.Join(arcOn, ", "), a.On)
			}
		}
	}

	if lp := s.Loop; lp != nil && lp.Mode == "parallel" && !lp.AllowSetCtx {
		const fix = "set_ctx from parallel iterations races: use then.set_iter for iteration state, or opt in with loop.spec.allow_set_ctx: true"
		if len(s.SetCtx) > 0 {
			v.add(sp+".set_ctx", s.Line, "%s", fix)
		}
		for j, t := range s.Tasks {
			if t == nil || t.Policy == nil {
				continue
			}
			for k, r := range t.Policy.Rules {
				if r != nil && len(r.Then.SetCtx) > 0 {
					rp := rulePath(t, r, sp, j, k)
					v.add(thenPath(r, rp)+".set_ctx", r.Line, "%s", fix)
				}
			}
		}
	}
}

func rulePath(t *Task, r *Rule, sp string, j, k int) string {
	if r.Path != "" {
		return r.Path
	}
	tp := t.Path
	if tp == "" {
		tp = fmt.Sprintf("%s.tool[%d]", sp, j)
	}
	return fmt.Sprintf("%s.spec.policy.rules[%d]", tp, k)
}

// thenPath is the path of a rule's then block (under else for else rules).
func thenPath(r *Rule, rp string) string {
	if r.Else {
		return rp + ".else.then"
	}
	return rp + ".then"
}

func (v *validator) ruleShape(r *Rule, rp string) {
	if r.Else && r.When != "" {
		v.add(rp, r.Line, "a rule has either when or else, not both")
	}
	if !r.Else && r.When == "" {
		v.add(rp+".when", r.Line, "rule needs when (or use {else: {then: {...}}})")
	}
}

// task checks one task; labels is the step's label set (nil for workbook
// entries, whose jump targets depend on the calling step).
func (v *validator) task(t *Task, tp string, labels map[string]*Task) {
	switch t.Kind {
	case "":
		v.add(tp+".kind", t.Line, "task needs a kind (one of %s)", strings.Join(Kinds, ", "))
	case "noop":
	case "http":
		v.require(t, tp, "http", "url")
	case "python":
		v.require(t, tp, "python", "code", "code_b64")
	case "postgres":
		v.require(t, tp, "postgres", "command", "sql", "query")
	case "playbook":
		v.require(t, tp, "playbook", "path")
	case "workbook":
		ref := t.Workbook
		if ref == "" {
			ref, _ = t.Config["name"].(string)
		}
		switch {
		case ref == "":
			v.add(tp+".name", t.Line, "a workbook task needs name: the workbook entry to call")
		case v.p.Workbook[ref] == nil:
			v.add(tp+".name", t.Line, "workbook entry %q does not exist (root workbook has: %s)", ref, listOrNone(sortedKeys(v.p.Workbook)))
		}
	default:
		v.add(tp+".kind", t.Line, "unknown task kind %q (one of %s)", t.Kind, strings.Join(Kinds, ", "))
	}
	if t.TimeoutS < 0 {
		v.add(tp+".timeout", t.Line, "timeout must be ≥ 0")
	}
	if t.Policy == nil {
		return
	}
	for k, r := range t.Policy.Rules {
		if r == nil {
			continue
		}
		rp := r.Path
		if rp == "" {
			rp = fmt.Sprintf("%s.spec.policy.rules[%d]", tp, k)
		}
		v.ruleShape(r, rp)
		th := r.Then
		thp := thenPath(r, rp)
		switch th.Do {
		case "continue", "break", "fail":
		case "retry":
			if th.Attempts < 1 {
				v.add(thp+".attempts", r.Line, "retry needs attempts ≥ 1 (total attempts), got %d", th.Attempts)
			}
		case "jump":
			switch {
			case th.To == "":
				v.add(thp+".to", r.Line, "jump needs to: <task label of this step>")
			case labels != nil && labels[th.To] == nil:
				v.add(thp+".to", r.Line, "jump target %q is not a task of this step (tasks: %s)", th.To, listOrNone(sortedKeys(labels)))
			}
		case "":
			v.add(thp+".do", r.Line, "then.do is required (one of continue, retry, jump, break, fail)")
		default:
			v.add(thp+".do", r.Line, "unknown then.do %q (one of continue, retry, jump, break, fail)", th.Do)
		}
		switch th.Backoff {
		case "", "none", "linear", "exponential":
		default:
			v.add(thp+".backoff", r.Line, "backoff must be none, linear or exponential, got %q", th.Backoff)
		}
		if th.Delay < 0 {
			v.add(thp+".delay", r.Line, "delay must be ≥ 0 seconds, got %g", th.Delay)
		}
		if th.MaxDelay < 0 {
			v.add(thp+".max_delay", r.Line, "max_delay must be ≥ 0 seconds, got %g", th.MaxDelay)
		}
		if th.To != "" && th.Do != "jump" {
			v.add(thp+".to", r.Line, "to is only valid with do: jump")
		}
		if th.Allow != nil {
			v.add(thp+".allow", r.Line, "then.allow is only valid in step admission rules (spec.policy.admit.rules)")
		}
	}
}

// require reports a task missing all of the alternative config fields.
func (v *validator) require(t *Task, tp, kind string, keys ...string) {
	for _, k := range keys {
		if present(t.Config[k]) {
			return
		}
	}
	v.add(tp+"."+keys[0], t.Line, "a %s task needs %s", kind, strings.Join(keys, " or "))
}

func present(x any) bool {
	switch x := x.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(x) != ""
	}
	return true
}

func (v *validator) workbookCycles() {
	for _, name := range sortedKeys(v.p.Workbook) {
		seen := map[string]bool{}
		cur := name
		for {
			t := v.p.Workbook[cur]
			if t == nil || t.Kind != "workbook" {
				break
			}
			if seen[cur] {
				tp := v.p.Workbook[name].Path
				if tp == "" {
					tp = "workbook." + name
				}
				v.add(tp+".name", v.p.Workbook[name].Line, "workbook entry %q calls itself through kind: workbook", name)
				break
			}
			seen[cur] = true
			cur = t.Workbook
			if cur == "" {
				cur, _ = t.Config["name"].(string)
			}
		}
	}
}

func (v *validator) suggestStep(name string) string {
	names := sortedKeys(v.steps)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) <= 12 {
		return " (steps: " + listOrNone(names) + ")"
	}
	return ""
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
