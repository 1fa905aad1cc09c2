package dsl

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// lintOf loads src (hdr + steps) and returns Lint's findings.
func lintOf(t *testing.T, steps string) []Problem {
	t.Helper()
	return Lint(mustLoad(t, hdr+steps))
}

// hasFinding requires a finding of code at line whose message holds msg.
func hasFinding(t *testing.T, ps []Problem, code string, line int, msg string) Problem {
	t.Helper()
	for _, p := range ps {
		if p.Code == code && (line == 0 || p.Line == line) && strings.Contains(p.Message, msg) {
			return p
		}
	}
	t.Fatalf("no %s finding at line %d with %q in:\n%s", code, line, msg, dumpFindings(ps))
	return Problem{}
}

// noFinding requires no finding of the given codes.
func noFinding(t *testing.T, ps []Problem, codes ...string) {
	t.Helper()
	for _, p := range ps {
		for _, c := range codes {
			if p.Code == c {
				t.Errorf("unexpected %s finding:\n%s", c, dumpFindings(ps))
				return
			}
		}
	}
}

func dumpFindings(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Severity + " [" + p.Code + "] ")
		b.WriteString(FormatProblems("lint", []Problem{p}))
	}
	return b.String()
}

func TestLintUnreachable(t *testing.T) {
	ps := lintOf(t, `  - step: start
    next: {arcs: [{step: end}]}
  - step: orphan
    tool: {kind: noop}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop}
`)
	p := hasFinding(t, ps, LintUnreachable, 8, `step "orphan" is not reachable from the entry step "start"`)
	if p.Severity != SeverityWarning || p.Path != "workflow[1].step" {
		t.Errorf("finding = %+v", p)
	}
	// One source of truth: Load warned about the same thing once, and Lint
	// (which includes Load's warnings) does not repeat it.
	n := 0
	for _, q := range ps {
		if strings.Contains(q.Message, "not reachable") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("unreachable reported %d times:\n%s", n, dumpFindings(ps))
	}
	noFinding(t, ps, LintNoTerminal, LintUnguardedCycle, LintJumpCycle, LintFanIn, LintNoDefaultArc, LintDeadArc)
}

func TestLintNoTerminal(t *testing.T) {
	// a ⇄ b with guards: no step ends the branch (livelock).
	ps := lintOf(t, `  - step: start
    next: {arcs: [{step: a}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "{{ ctx.x }}"}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: a, when: "{{ ctx.y }}"}]}
`)
	hasFinding(t, ps, LintNoTerminal, 7, `step "start" can never reach a terminal step`)
	p := hasFinding(t, ps, LintNoTerminal, 10, `step "a" can never reach a terminal step`)
	if p.Path != "workflow[1].next" || p.Severity != SeverityWarning {
		t.Errorf("finding = %+v", p)
	}
	hasFinding(t, ps, LintNoTerminal, 13, `step "b"`)
	noFinding(t, ps, LintUnguardedCycle)

	// A failure arc to a terminal step is a way out.
	ps = lintOf(t, `  - step: start
    next: {arcs: [{step: a}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "{{ ctx.x }}"}, {step: cleanup, on: step.failed}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: a, when: "{{ ctx.y }}"}]}
  - step: cleanup
    tool: {kind: noop}
`)
	noFinding(t, ps, LintNoTerminal)
}

func TestLintUnguardedCycle(t *testing.T) {
	ps := lintOf(t, `  - step: start
    next: {arcs: [{step: a}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: a}]}
`)
	p := hasFinding(t, ps, LintUnguardedCycle, 10, "unconditional cycle a → b → a")
	if p.Path != "workflow[1].next" {
		t.Errorf("path = %q", p.Path)
	}
	hasFinding(t, ps, LintNoTerminal, 10, `step "a"`)

	// A self-loop, and a cycle through an inclusive fan-out (every arc
	// fires) even though an exit exists.
	ps = lintOf(t, `  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: start}]}
`)
	hasFinding(t, ps, LintUnguardedCycle, 8, "unconditional cycle start → start")
	ps = lintOf(t, `  - step: start
    next:
      spec: {mode: inclusive}
      arcs: [{step: end}, {step: again}]
  - step: again
    tool: {kind: noop}
    next: {arcs: [{step: start}]}
  - step: end
    tool: {kind: noop}
`)
	hasFinding(t, ps, LintUnguardedCycle, 7, "start → again → start")
	noFinding(t, ps, LintNoTerminal)

	// The polling idiom: a guarded exit before the catch-all that closes
	// the loop is fine.
	ps = lintOf(t, `  - step: start
    next: {arcs: [{step: check}]}
  - step: check
    tool: {kind: noop}
    next:
      arcs:
        - step: end
          when: "{{ check.done }}"
        - step: wait
  - step: wait
    tool: {kind: noop}
    next: {arcs: [{step: check}]}
  - step: end
    tool: {kind: noop}
`)
	noFinding(t, ps, LintUnguardedCycle, LintNoTerminal, LintDeadArc, LintNoDefaultArc)
}

func TestLintDeadArc(t *testing.T) {
	// The catch-all first: the exit is never taken, so the loop is
	// unconditional and there is no way to a terminal step.
	ps := lintOf(t, `  - step: start
    next: {arcs: [{step: check}]}
  - step: check
    tool: {kind: noop}
    next:
      arcs:
        - step: wait
        - step: end
          when: "{{ check.done }}"
  - step: wait
    tool: {kind: noop}
    next: {arcs: [{step: check}]}
  - step: end
    tool: {kind: noop}
`)
	p := hasFinding(t, ps, LintDeadArc, 13, `arc to "end" is never taken`)
	if p.Path != "workflow[1].next.arcs[1]" {
		t.Errorf("path = %q", p.Path)
	}
	hasFinding(t, ps, LintUnguardedCycle, 10, "check → wait → check")
	hasFinding(t, ps, LintNoTerminal, 10, `step "check"`)
}

func TestLintJumpCycle(t *testing.T) {
	// fetch → store → jump fetch, and nothing ever leaves.
	ps := lintOf(t, `  - step: start
    tool:
      - fetch:
          kind: noop
      - store:
          kind: noop
          spec:
            policy:
              rules:
                - else:
                    then: {do: jump, to: fetch}
`)
	p := hasFinding(t, ps, LintJumpCycle, 16, `jump cycle without a break or bounded attempt: in step "start", task "store" jumps to "fetch"`)
	if p.Path != "workflow[0].tool[1].store.spec.policy.rules[0].else.then.to" {
		t.Errorf("path = %q", p.Path)
	}

	// Each of these leaves the cycle: a break, a fail rule, a bounded
	// retry, a guarded jump (no else: continue past the last task).
	for name, rules := range map[string]string{
		"break":       "[{when: \"{{ _prev.more }}\", then: {do: jump, to: fetch}}, {else: {then: {do: break}}}]",
		"fail":        "[{when: \"{{ outcome.status == 'error' }}\", then: {do: fail}}, {else: {then: {do: jump, to: fetch}}}]",
		"retry":       "[{when: \"{{ outcome.status == 'error' }}\", then: {do: retry, attempts: 3}}, {else: {then: {do: jump, to: fetch}}}]",
		"guarded":     "[{when: \"{{ _prev.more }}\", then: {do: jump, to: fetch}}]",
		"continue-on": "[{when: \"{{ _prev.more }}\", then: {do: jump, to: fetch}}, {else: {then: {do: continue}}}]",
	} {
		t.Run(name, func(t *testing.T) {
			ps := lintOf(t, `  - step: start
    tool:
      - fetch:
          kind: noop
      - store:
          kind: noop
          spec:
            policy:
              rules: `+rules+`
`)
			noFinding(t, ps, LintJumpCycle)
		})
	}

	// A self-jump with a guard and an else that jumps too.
	ps = lintOf(t, `  - step: start
    tool:
      kind: noop
      spec:
        policy:
          rules:
            - when: "{{ iter.n < 3 }}"
              then: {do: jump, to: start_task, set_iter: {n: "{{ iter.n + 1 }}"}}
            - else:
                then: {do: jump, to: start_task}
`)
	if n := countCode(ps, LintJumpCycle); n != 2 {
		t.Errorf("jump-cycle findings = %d, want 2 (one per jump rule):\n%s", n, dumpFindings(ps))
	}

	// A cycle the first task cannot reach is not reported.
	ps = lintOf(t, `  - step: start
    tool:
      - a:
          kind: noop
          spec: {policy: {rules: [{else: {then: {do: break}}}]}}
      - b:
          kind: noop
          spec: {policy: {rules: [{else: {then: {do: jump, to: b}}}]}}
`)
	noFinding(t, ps, LintJumpCycle)
}

func countCode(ps []Problem, code string) int {
	n := 0
	for _, p := range ps {
		if p.Code == code {
			n++
		}
	}
	return n
}

func TestLintNoDefaultArc(t *testing.T) {
	ps := lintOf(t, `  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - step: a
          when: "{{ ctx.kind == 'a' }}"
        - step: b
          when: "{{ ctx.kind == 'b' }}"
  - step: a
    tool: {kind: noop}
  - step: b
    tool: {kind: noop}
`)
	p := hasFinding(t, ps, LintNoDefaultArc, 8, "no default arc: every arc of step \"start\" has a when, so the branch ends silently if no condition matches")
	if p.Severity != SeverityInfo || p.Path != "workflow[0].next" {
		t.Errorf("finding = %+v", p)
	}

	for name, arcs := range map[string]string{
		"catch-all":    `[{step: a, when: "{{ ctx.x }}"}, {step: b}]`,
		"not":          `[{step: a, when: "{{ ctx.x }}"}, {step: b, when: "{{ not ctx.x }}"}]`,
		"not parens":   `[{step: a, when: "{{ ctx.x > 1 }}"}, {step: b, when: "{{ not (ctx.x > 1) }}"}]`,
		"== and !=":    `[{step: a, when: "{{ ctx.has_more == true }}"}, {step: b, when: "{{ ctx.has_more != true }}"}]`,
		"inclusive":    `{spec: {mode: inclusive}, arcs: [{step: a, when: "{{ ctx.x }}"}, {step: b, when: "{{ ctx.y }}"}]}`,
		"failure only": `[{step: a, on: step.failed}]`,
		"event test":   `[{step: a, when: "{{ event.name == 'step.done' }}"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			next := "{arcs: " + arcs + "}"
			if strings.HasPrefix(arcs, "{") {
				next = arcs
			}
			ps := lintOf(t, `  - step: start
    tool: {kind: noop}
    next: `+next+`
  - step: a
    tool: {kind: noop}
  - step: b
    tool: {kind: noop}
`)
			noFinding(t, ps, LintNoDefaultArc)
		})
	}
}

func TestLintFanIn(t *testing.T) {
	fanIn := `  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: left}, {step: right}]
  - step: left
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: right
    tool: {kind: noop}
    next: {arcs: [{step: middle}]}
  - step: middle
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: join
    tool: {kind: noop}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop}
`
	ps := lintOf(t, fanIn)
	// join is the join of the fan-out (NoETL's planner rule): it runs once,
	// so converging on it is not a finding, and nor are the steps after it.
	noFinding(t, ps, LintFanIn)
	pb := mustLoad(t, hdr+fanIn)
	if got := pb.Step("join").JoinOf; !reflect.DeepEqual(got, []string{"left", "middle"}) {
		t.Errorf("join.JoinOf = %v", got)
	}

	// Branches converging on a loop head: c's arc back to left makes left
	// a back-edge upstream of c, so c is not a join and runs per branch.
	ps = lintOf(t, `  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: left}, {step: right}]
  - step: left
    tool: {kind: noop}
    next: {arcs: [{step: c}]}
  - step: right
    tool: {kind: noop}
    next: {arcs: [{step: c}]}
  - step: c
    tool: {kind: noop}
    next: {arcs: [{step: left, when: "{{ ctx.again }}"}, {step: done}]}
  - step: done
    tool: {kind: noop}
`)
	p := hasFinding(t, ps, LintFanIn, 8, `inclusive fan-out of step "start" (to left, right): the branches converge on step "c", which is not a join of this fan-out and will run once per incoming branch`)
	if p.Path != "workflow[0].next" || p.Severity != SeverityWarning {
		t.Errorf("finding = %+v", p)
	}
	// Both branches also reach left again through c.
	hasFinding(t, ps, LintFanIn, 8, `converge on step "left"`)
	if n := countCode(ps, LintFanIn); n != 2 {
		t.Errorf("fan-in findings = %d, want 2:\n%s", n, dumpFindings(ps))
	}

	// Disjoint branches, and an exclusive choice, do not converge.
	ps = lintOf(t, `  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: left}, {step: right}]
  - step: left
    tool: {kind: noop}
  - step: right
    tool: {kind: noop}
`)
	noFinding(t, ps, LintFanIn)
	ps = lintOf(t, `  - step: start
    tool: {kind: noop}
    next:
      arcs: [{step: left, when: "{{ ctx.l }}"}, {step: right}]
  - step: left
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: right
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: join
    tool: {kind: noop}
`)
	noFinding(t, ps, LintFanIn)

	// Two guarded arcs to the same step: both may match.
	ps = lintOf(t, `  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: a, when: "{{ ctx.x }}"}, {step: a, when: "{{ ctx.y }}"}]
  - step: a
    tool: {kind: noop}
`)
	hasFinding(t, ps, LintFanIn, 8, `converge on step "a"`)
}

func TestLintIncludesLoadWarnings(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool: {kind: noop}
    next: [end]
  - step: end
    tool: {kind: noop}
`)
	ps := Lint(p)
	if len(p.Warnings) == 0 {
		t.Fatal("expected a deprecation warning from Load")
	}
	for _, w := range p.Warnings {
		found := false
		for _, q := range ps {
			if q.Line == w.Line && q.Message == w.Message && q.Severity == SeverityWarning {
				found = true
			}
		}
		if !found {
			t.Errorf("Load warning %v missing from Lint:\n%s", w, dumpFindings(ps))
		}
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].Line < ps[i-1].Line {
			t.Errorf("not sorted by line:\n%s", dumpFindings(ps))
		}
	}
}

func TestLintBuiltInGo(t *testing.T) {
	// No lines, an unknown arc target and an unknown jump target: no panic.
	p := &Playbook{APIVersion: APIVersion, Kind: "Playbook", Metadata: Metadata{Name: "g"}, Workflow: []*Step{
		{Name: "start", Next: &Next{Mode: "exclusive", Arcs: []*Arc{{Step: "a"}, {Step: "nowhere"}}}},
		{Name: "a", Tasks: []*Task{
			{Name: "t", Kind: "noop", Policy: &Policy{Rules: []*Rule{{Else: true, Then: Then{Do: "jump", To: "t"}}}}},
			{Name: "u", Kind: "noop", Policy: &Policy{Rules: []*Rule{{Else: true, Then: Then{Do: "jump", To: "missing"}}}}},
		}, Next: &Next{Mode: "exclusive", Arcs: []*Arc{{Step: "a"}}}},
	}}
	ps := Lint(p)
	hasFinding(t, ps, LintUnguardedCycle, 0, "a → a")
	q := hasFinding(t, ps, LintJumpCycle, 0, `task "t" jumps to "t"`)
	if q.Path != "workflow[1].tool[0].spec.policy.rules[0].else.then.to" {
		t.Errorf("path = %q", q.Path)
	}
	p2 := hasFinding(t, ps, LintNoTerminal, 0, `step "a"`)
	if p2.Path != "workflow[1].next" {
		t.Errorf("path = %q", p2.Path)
	}
	if Lint(nil) != nil {
		t.Error("Lint(nil) != nil")
	}
}

// TestLintConformanceAndExamples: the reference playbooks have no
// livelock, unconditional cycle or trapped jump cycle.
func TestLintConformanceAndExamples(t *testing.T) {
	files := conformanceFiles(t)
	examples, _ := filepath.Glob("../../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	files = append(files, examples...)
	files = append(files, "testdata/valid/seed003_pagination.yaml")
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			ps := Lint(mustLoadFile(t, f))
			noFinding(t, ps, LintNoTerminal, LintUnguardedCycle, LintJumpCycle)
		})
	}
}
