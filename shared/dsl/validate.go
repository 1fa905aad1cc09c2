package dsl

import (
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/display"
	"github.com/noetl/gcpengine/shared/suggest"
)

// Validate checks the model (also one built or edited in Go) against the
// DSL's cross-reference and value rules and returns every problem found
// (nil when valid): apiVersion/kind/metadata.name, a non-empty workflow,
// unique identifier step names, the entry and final steps
// (executor.spec.entry_step / final_step name existing steps; no arc leads
// to the final step), known task kinds (kinds.go; the kinds that need
// outside services are rejected naming what they need) with their required
// fields and literal values, workbook calls of existing entries, unique
// task labels per step, policy rules (then.do, retry attempts ≥ 1,
// backoff, delay ≥ 0, jump targets in the same step, admit allow), set
// targets (scope and key), loop source (exactly one of in and cursor;
// cursor only with mode cursor; a postgres cursor with a claim),
// iterator, mode and max_in_flight, next mode and on_no_match, arc targets
// and `on`, output stores this stack can map (StoreTiers), and ctx targets
// in parallel and cursor loops (need loop.spec.allow_set_ctx: true). Every
// template must parse (template.Check). Problems carry the YAML line when
// the playbook came from Load.
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
	// inWorkbook is set while the root workbook's entries are checked.
	inWorkbook bool
}

func (v *validator) add(path string, line int, format string, args ...any) {
	// The line of the path's key, else of its nearest recorded ancestor;
	// the object's own line for a playbook built in Go.
	ln := lineIn(v.p.lines, path)
	if ln == 0 {
		ln = line
	}
	// A path or a message may quote a user's name: never with its
	// control characters raw.
	v.problems = append(v.problems, Problem{Line: ln, Path: display.Escape(path), Message: display.Escape(fmt.Sprintf(format, args...))})
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
	case "Subscription":
		v.add("kind", 0, "kind Subscription is a subscription resource, not a playbook: register it through the subscriptions API instead of running it")
	default:
		v.add("kind", 0, "kind must be Playbook, got %q", p.Kind)
	}
	if p.Metadata.Name == "" {
		v.add("metadata.name", 0, "metadata.name is required")
	}
	v.name("metadata.name", 0, p.Metadata.Name)
	v.name("metadata.path", 0, p.Metadata.Path)
	v.name("metadata.version", 0, p.Metadata.Version)
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
	if p.Entry != "" && v.steps[p.Entry] == nil && len(v.steps) > 0 {
		v.add("executor.spec.entry_step", 0, "entry step %q does not exist%s", p.Entry, v.suggestStep(p.Entry))
	}
	if p.FinalStep != "" {
		switch {
		case v.steps[p.FinalStep] == nil:
			v.add("executor.spec.final_step", 0, "final step %q does not exist%s", p.FinalStep, v.suggestStep(p.FinalStep))
		case p.FinalStep == p.EntryStep():
			v.add("executor.spec.final_step", 0, "final step %q is also the entry step: the final step runs once after everything else", p.FinalStep)
		}
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
		v.inWorkbook = true
		v.task(t, tp, nil)
		v.inWorkbook = false
	}
	v.workbookCycles()

	for i, s := range p.Workflow {
		if s != nil {
			v.step(s, stepPath(s, i))
		}
	}
	v.templates()
}

// name refuses a name that holds a control character, a bidirectional
// control, a newline or a tab (shared/display UnsafeInName): a name is
// shown in tables, logs and the console, where such a character would
// drive the operator's terminal or hide what the name says.
func (v *validator) name(path string, line int, s string) {
	if r, bad := display.UnsafeInName(s); bad {
		v.add(path, line, "%s %q holds the control character %U: names may not contain control characters, bidirectional controls, newlines or tabs", path, s, r)
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
			rp := ruleIn(r, sp+".spec.policy.admit", k)
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
		if lp.In == nil && lp.Cursor == nil {
			v.add(path+".in", line, "loop.in is required: a template rendering to a list, or a list (or a loop.cursor with spec.mode: cursor)")
		}
		switch {
		case lp.Iterator == "":
			v.add(path+".iterator", line, "loop.iterator is required (the name each element is bound to: iter.<iterator>)")
		case !isIdent(lp.Iterator):
			v.add(path+".iterator", line, "loop.iterator %q must be an identifier", lp.Iterator)
		}
		switch lp.Mode {
		case "", "sequential", "parallel":
			if lp.Cursor != nil {
				v.add(path+".cursor", line, "loop.cursor needs spec.mode: cursor (got %s)", modeOr(lp.Mode))
			}
		case "cursor":
			if lp.Cursor == nil {
				v.add(path+".spec.mode", line, "loop.spec.mode cursor needs a loop.cursor source (a claim statement), not loop.in")
			}
		default:
			v.add(path+".spec.mode", line, "loop mode must be sequential, parallel or cursor, got %q", lp.Mode)
		}
		if lp.Cursor != nil {
			if lp.In != nil {
				v.add(path+".cursor", line, "a loop has either in (a collection) or cursor (pull), not both")
			}
			v.cursor(lp.Cursor, path+".cursor")
		}
		if lp.MaxInFlight < 0 {
			v.add(path+".spec.max_in_flight", line, "max_in_flight must be at least 1")
		}
		if lp.MaxInFlightTemplate != "" && lp.MaxInFlight != 0 {
			v.add(path+".spec.max_in_flight", line, "max_in_flight is either an integer or a template, not both")
		}
		switch lp.Exec {
		case "", "distributed", "local":
		default:
			v.add(path+".spec.policy.exec", line, "loop.spec.policy.exec must be distributed or local, got %q", lp.Exec)
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
		tp := taskPath(t, sp, j)
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
		tp := taskPath(t, sp, j)
		v.task(t, tp, labels)
	}

	v.assignments(s.Set, sp+".set", s.Line)
	if s.Output != nil {
		v.output(s.Output, sp+".output", s.Line)
	}
	if s.Compensate != "" && v.steps[s.Compensate] == nil {
		v.add(sp+".compensate", s.Line, "compensate names unknown step %q%s", s.Compensate, v.suggestStep(s.Compensate))
	}
	if s.Next != nil {
		switch s.Next.Mode {
		case "", "exclusive", "inclusive":
		default:
			v.add(sp+".next.spec.mode", s.Line, "next.spec.mode must be exclusive or inclusive, got %q", s.Next.Mode)
		}
		switch s.Next.OnNoMatch {
		case "", "complete", "quiet":
		default:
			v.add(sp+".next.spec.on_no_match", s.Line, "next.spec.on_no_match must be complete or quiet, got %q", s.Next.OnNoMatch)
		}
		for k, a := range s.Next.Arcs {
			if a == nil {
				continue
			}
			ap := arcPath(a, sp, k)
			switch {
			case a.Step == "":
				v.add(ap+".step", a.Line, "arc needs step: <target step name>")
			case v.steps[a.Step] == nil:
				v.add(ap+".step", a.Line, "arc to unknown step %q%s", a.Step, v.suggestStep(a.Step))
			case a.Step == v.p.FinalStep:
				v.add(ap+".step", a.Line, "arc to the final step %q: executor.spec.final_step runs once when the execution is quiescent, never through an arc", a.Step)
			}
			v.assignments(a.Set, ap+".set", a.Line)
			if !a.On.Valid() {
				v.add(ap+".on", a.Line, "arc on must be one of %s, got %q", ArcOnList(), a.On)
			}
		}
	}

	if lp := s.Loop; lp != nil && (lp.Mode == "parallel" || lp.Mode == "cursor") && !lp.AllowSetCtx {
		fix := fmt.Sprintf("ctx targets (set ctx.*, set_ctx) from %s iterations race: use iter.<name> targets for iteration state, or opt in with loop.spec.allow_set_ctx: true", lp.Mode)
		ctxIn := func(as []Assignment, path string, line int) {
			for _, a := range as {
				if a.Scope == ScopeCtx {
					p := a.Path
					if p == "" {
						p = path
					}
					v.add(p, line, "%s", fix)
				}
			}
		}
		ctxIn(s.Set, sp+".set", s.Line)
		for j, t := range s.Tasks {
			if t == nil {
				continue
			}
			tp := taskPath(t, sp, j)
			ctxIn(t.Set, tp+".set", t.Line)
			if t.Policy == nil {
				continue
			}
			for k, r := range t.Policy.Rules {
				if r != nil {
					ctxIn(r.Then.Set, thenPath(r, rulePath(t, r, sp, j, k))+".set", r.Line)
				}
			}
		}
	}
}

func modeOr(m string) string {
	if m == "" {
		return "sequential"
	}
	return m
}

// cursor checks a cursor loop's source.
func (v *validator) cursor(c *Cursor, path string) {
	switch {
	case c.Kind == "postgres":
	case unsupportedCursors[c.Kind] != "":
		v.add(path+".kind", c.Line, "cursor kind %q needs %s, which this stack does not have (cursor kinds here: %s)", c.Kind, unsupportedCursors[c.Kind], strings.Join(CursorKinds, ", "))
	default:
		v.add(path+".kind", c.Line, "unknown cursor kind %q (one of %s)", c.Kind, strings.Join(CursorKinds, ", "))
	}
	if strings.TrimSpace(c.Claim) == "" {
		v.add(path+".claim", c.Line, "loop.cursor needs claim: the statement that leases up to {{ __frame_max_rows }} rows and returns them")
	}
	if strings.TrimSpace(c.Auth) == "" {
		v.add(path+".auth", c.Line, "loop.cursor needs auth: the credential of the claim connection")
	}
}

// assignments checks set targets built in Go (Load already checked the
// YAML spelling).
func (v *validator) assignments(as []Assignment, path string, line int) {
	for _, a := range as {
		p := a.Path
		if p == "" {
			p = path
		}
		switch a.Scope {
		case ScopeCtx, ScopeIter, ScopeStep, ScopeVar:
		default:
			v.add(p, line, "set target scope must be ctx, iter, step or a bare name, got %q", a.Scope)
		}
		if a.Key == "" {
			v.add(p, line, "set target %q has an empty name", a.Target())
		}
	}
}

// output checks an output block.
func (v *validator) output(o *Output, path string, line int) {
	if o.Line > 0 {
		line = o.Line
	}
	if st := o.Store; st != nil {
		switch {
		case StoreTiers[st.Kind] != "":
			if st.Tier != "" && st.Tier != StoreTiers[st.Kind] {
				v.add(path+".store.kind", line, "output.store tier %q does not match kind %q (%s)", st.Tier, st.Kind, StoreTiers[st.Kind])
			}
		case UnsupportedStores[st.Kind] != "":
			v.add(path+".store.kind", line, "output.store kind %q needs %s; kinds here: %s", st.Kind, UnsupportedStores[st.Kind], storeKindsList())
		default:
			v.add(path+".store.kind", line, "unknown output.store kind %q (kinds here: %s)", st.Kind, storeKindsList())
		}
	}
	if o.InlineMaxBytes != nil && *o.InlineMaxBytes < 0 {
		v.add(path+".inline_max_bytes", line, "output.inline_max_bytes must be ≥ 0")
	}
	seen := map[string]bool{}
	for i, sel := range o.Select {
		if seen[sel.As] {
			v.add(fmt.Sprintf("%s.select[%d]", path, i), line, "output select name %q is used twice", sel.As)
		}
		seen[sel.As] = true
	}
}

// storeKindsList renders the store kinds that map here, for messages.
func storeKindsList() string {
	keys := sortedKeys(StoreTiers)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " → " + StoreTiers[k]
	}
	return strings.Join(parts, ", ")
}

func rulePath(t *Task, r *Rule, sp string, j, k int) string {
	return ruleIn(r, taskPath(t, sp, j)+".spec.policy", k)
}

// ruleIn is r's YAML path: r.Path, else that of rule k of the policy at
// policy.
func ruleIn(r *Rule, policy string, k int) string {
	if r.Path != "" {
		return r.Path
	}
	return fmt.Sprintf("%s.rules[%d]", policy, k)
}

// taskPath is t's YAML path: t.Path, else that of task j of the step at sp.
func taskPath(t *Task, sp string, j int) string {
	if t.Path != "" {
		return t.Path
	}
	return fmt.Sprintf("%s.tool[%d]", sp, j)
}

// arcPath is a's YAML path: a.Path, else that of arc k of the step at sp.
func arcPath(a *Arc, sp string, k int) string {
	if a.Path != "" {
		return a.Path
	}
	return fmt.Sprintf("%s.next.arcs[%d]", sp, k)
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
	v.name(tp+".name", t.Line, t.Name)
	switch {
	case t.Kind == "":
		v.add(tp+".kind", t.Line, "task needs a kind (one of %s)", strings.Join(Kinds, ", "))
	case t.Kind == "workbook":
		ref := t.Workbook
		if ref == "" {
			ref, _ = t.Config["name"].(string)
		}
		switch {
		case ref == "":
			v.add(tp+".name", t.Line, "a workbook task needs name: the workbook entry to call")
		case v.p.Workbook[ref] == nil:
			v.add(tp+".name", t.Line, "workbook entry %q does not exist (root workbook has: %s)", ref, listOrNone(sortedKeys(v.p.Workbook)))
		default:
			entry := v.p.Workbook[ref]
			if ek := entry.Kind; knownKind(ek) && ek != "workbook" {
				for _, k := range sortedKeys(t.Config) {
					if k != "name" && !kindReads(ek, k) {
						v.add(tp+"."+k, t.Line, "task key %q is not read by the %s entry %q this workbook task calls (it reads: %s)%s", k, ek, ref, kindKeysList(ek), didYouMean(ek, k))
					}
				}
				// The call's keys override the entry's (the worker merges
				// them the same way): the merged task must be complete.
				merged := &Task{Kind: ek, Line: t.Line, Script: entry.Script, Config: map[string]any{}}
				for k, x := range entry.Config {
					merged.Config[k] = x
				}
				for k, x := range t.Config {
					if k != "name" {
						merged.Config[k] = x
					}
				}
				if t.Script != nil {
					merged.Script = t.Script
				}
				v.requirements(merged, tp, ref)
			}
		}
	case !knownKind(t.Kind):
		v.add(tp+".kind", t.Line, "%s", unknownKindMessage(t.Kind))
	default:
		v.kindChecks(t, tp)
		for _, k := range sortedKeys(t.Config) {
			if !kindReads(t.Kind, k) {
				v.add(tp+"."+k, t.Line, "%s", unknownKeyMessage(t.Kind, k))
			}
		}
	}
	v.assignments(t.Set, tp+".set", t.Line)
	if t.Output != nil {
		v.output(t.Output, tp+".output", t.Line)
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
		rp := ruleIn(r, tp+".spec.policy", k)
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
			v.add(thp+".backoff", r.Line, "backoff must be none, linear or exponential (NoETL's fixed is loaded as none), got %q", th.Backoff)
		}
		v.assignments(th.Set, thp+".set", r.Line)
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
	if best := nearest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) <= 12 {
		return " (steps: " + listOrNone(names) + ")"
	}
	return ""
}

// nearest is suggest.Nearest: the name among names that name most likely
// misspells, or "".
func nearest(name string, names []string) string { return suggest.Nearest(name, names) }

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
