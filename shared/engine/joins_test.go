package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

func failed(step string, run int, msg string) types.Event {
	ev := types.NewEvent(types.EvStepFailed, "ex1", "execute", t0, step, itoa(run))
	ev.Step, ev.StepRun = step, run
	ev.Payload = map[string]any{"error": map[string]any{"kind": "python", "message": msg}}
	return ev
}

func cmdSteps(out Output) []string {
	var s []string
	for _, c := range out.Commands {
		s = append(s, c.Step)
	}
	return s
}

// control_flow_workbook's shape: the hot branch fans out to a and b, the
// cold branch never runs; end joins a, b and cold_task and runs once, as
// soon as a and b arrived (cold_task can no longer arrive).
const hotCold = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: hotcold}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - {step: hot, when: "{{ workload.hot }}"}
        - {step: cold, when: "{{ not workload.hot }}"}
  - step: hot
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: end, args: {who: a}}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: end, args: {who: b}}]}
  - step: cold
    tool: {kind: noop}
    next: {arcs: [{step: cold_task}]}
  - step: cold_task
    tool: {kind: noop}
    next: {arcs: [{step: end, args: {who: cold}}]}
  - step: end
    tool: {kind: noop}
`

func TestJoinFiresWhenOtherBranchesCannotArrive(t *testing.T) {
	e := load(t, hotCold)
	if got := e.PB.Step("end").JoinOf; !reflect.DeepEqual(got, []string{"a", "b", "cold_task"}) {
		t.Fatalf("JoinOf %v", got)
	}
	for _, hot := range []bool{true, false} {
		st, _ := started(t, e, map[string]any{"hot": hot})
		e.Apply(st, done("start", 1, nil), t0)
		var endCmds []types.Command
		apply := func(step string) {
			out, _, err := e.Apply(st, done(step, 1, nil), t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range out.Commands {
				if c.Step == "end" {
					endCmds = append(endCmds, c)
				}
			}
		}
		if hot {
			apply("hot")
			apply("b")
			if len(endCmds) != 0 || st.Joins["end"] == nil {
				t.Fatalf("end must wait for a: %+v", endCmds)
			}
			apply("a")
		} else {
			apply("cold")
			apply("cold_task")
		}
		if len(endCmds) != 1 || endCmds[0].StepRun != 1 {
			t.Fatalf("hot=%v: end commands %+v", hot, endCmds)
		}
		want := map[bool]string{true: "b", false: "cold"}[hot] // JoinOf order a, b, cold_task: later wins
		if endCmds[0].Args["who"] != want {
			t.Fatalf("hot=%v: merged args %v, want who=%s", hot, endCmds[0].Args, want)
		}
		e.Apply(st, done("end", 1, nil), t0)
		if st.Status != ExecOK || st.Joins != nil {
			t.Fatalf("hot=%v: status %s joins %+v", hot, st.Status, st.Joins)
		}
	}
}

// A branch that is still on its way (b → b2 → join) keeps the join
// waiting; a step outside JoinOf that reaches the join enters it as an
// ordinary token.
const longBranch = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: long}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: b2}]}
  - step: b2
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: join
    tool: {kind: noop}
    next: {arcs: [{step: again, when: "{{ workload.again and (ctx.n | default(0)) < 1 }}", set: {ctx.n: 1}}]}
  - step: again
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
`

func TestJoinWaitsForReachableBranch(t *testing.T) {
	e := load(t, longBranch)
	if got := e.PB.Step("join").JoinOf; !reflect.DeepEqual(got, []string{"a", "b2"}) {
		t.Fatalf("JoinOf %v", got)
	}
	st, _ := started(t, e, map[string]any{"again": true})
	e.Apply(st, done("start", 1, nil), t0)
	for _, s := range []string{"a", "b"} {
		out, _, _ := e.Apply(st, done(s, 1, nil), t0)
		for _, c := range out.Commands {
			if c.Step == "join" {
				t.Fatalf("join ran after %s while b2 can still arrive", s)
			}
		}
	}
	if JoinReady(e.PB, st, e.PB.Step("join")) {
		t.Fatal("JoinReady while b2 is scheduled")
	}
	out, _, _ := e.Apply(st, done("b2", 1, nil), t0)
	if got := cmdSteps(out); !reflect.DeepEqual(got, []string{"join"}) {
		t.Fatalf("after b2: %v", got)
	}
	out, _, _ = e.Apply(st, done("join", 1, nil), t0)
	if got := cmdSteps(out); !reflect.DeepEqual(got, []string{"again"}) {
		t.Fatalf("after join: %v", got)
	}
	// again is not in JoinOf: its token runs join at once.
	out, _, _ = e.Apply(st, done("again", 1, nil), t0)
	if len(out.Commands) != 1 || out.Commands[0].Step != "join" || out.Commands[0].StepRun != 2 {
		t.Fatalf("token from outside JoinOf: %+v", out.Commands)
	}
	e.Apply(st, done("join", 2, nil), t0)
	if st.Status != ExecOK {
		t.Fatalf("status %s failures %v", st.Status, st.Failures)
	}
}

// A failed branch without a failure arc fails the execution; the join
// still runs once for the branch that arrived (nothing else can come).
func TestJoinAfterFailedBranch(t *testing.T) {
	e := load(t, join)
	st, _ := started(t, e, nil)
	e.Apply(st, done("start", 1, nil), t0)
	e.Apply(st, done("fast", 1, nil), t0)
	out, _, _ := e.Apply(st, failed("slow", 1, "boom"), t0)
	if got := cmdSteps(out); !reflect.DeepEqual(got, []string{"join"}) {
		t.Fatalf("commands %v", got)
	}
	e.Apply(st, done("join", 1, nil), t0)
	if st.Status != ExecFailed || len(st.Failures) != 1 || !strings.Contains(st.Failures[0], "slow") {
		t.Fatalf("status %s failures %v", st.Status, st.Failures)
	}
}

const finalPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: final}
executor: {spec: {final_step: cleanup}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}]}
  - step: a
    tool: {kind: noop}
  - step: b
    tool: {kind: noop}
  - step: cleanup
    tool: {kind: noop}
`

func TestFinalStepRunsOnceWhenQuiescent(t *testing.T) {
	for _, cleanupFails := range []bool{false, true} {
		e := load(t, finalPB)
		if e.PB.FinalStep != "cleanup" {
			t.Fatalf("FinalStep %q", e.PB.FinalStep)
		}
		st, _ := started(t, e, nil)
		e.Apply(st, done("start", 1, nil), t0)
		out, _, _ := e.Apply(st, done("a", 1, nil), t0)
		if len(out.Commands) != 0 {
			t.Fatalf("cleanup ran while b runs: %v", cmdSteps(out))
		}
		out, _, _ = e.Apply(st, done("b", 1, nil), t0)
		if got := cmdSteps(out); !reflect.DeepEqual(got, []string{"cleanup"}) || st.Status != ExecRunning {
			t.Fatalf("after the last branch: %v, status %s", got, st.Status)
		}
		if out.Commands[0].Args != nil {
			t.Fatalf("the final step's token carries args: %v", out.Commands[0].Args)
		}
		if cleanupFails {
			out, _, _ = e.Apply(st, failed("cleanup", 1, "boom"), t0)
		} else {
			out, _, _ = e.Apply(st, done("cleanup", 1, nil), t0)
		}
		want := map[bool]types.Status{false: ExecOK, true: ExecFailed}[cleanupFails]
		if st.Status != want || len(out.Commands) != 0 || st.Steps["cleanup"].Run != 1 {
			t.Fatalf("cleanupFails=%v: status %s, commands %v", cleanupFails, st.Status, cmdSteps(out))
		}
	}
}

const noMatchPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: nomatch}
executor: {spec: {no_next_is_error: NNE}}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: exclusive, on_no_match: ONM}
      arcs: [{step: other, when: "{{ workload.go }}"}]
  - step: other
    tool: {kind: noop}
`

func TestNoNextIsErrorAndOnNoMatch(t *testing.T) {
	cases := []struct {
		nne, onm string
		goOn     bool
		want     types.Status
	}{
		{"false", "complete", false, ExecOK},
		{"true", "complete", false, ExecFailed},
		{"true", "quiet", false, ExecOK},
		{"true", "complete", true, ExecOK},
	}
	for _, c := range cases {
		src := strings.NewReplacer("NNE", c.nne, "ONM", c.onm).Replace(noMatchPB)
		e := load(t, src)
		st, _ := started(t, e, map[string]any{"go": c.goOn})
		e.Apply(st, done("start", 1, nil), t0)
		if c.goOn {
			e.Apply(st, done("other", 1, nil), t0)
		}
		if st.Status != c.want {
			t.Fatalf("no_next_is_error %s on_no_match %s go %v: status %s failures %v", c.nne, c.onm, c.goOn, st.Status, st.Failures)
		}
		if c.want == ExecFailed {
			errm, _ := st.Steps["start"].Error.(map[string]any)
			if errm["kind"] != ErrKindRouting || !strings.Contains(st.Failures[0], "no arc matched") {
				t.Fatalf("routing failure %v / %v", st.Steps["start"].Error, st.Failures)
			}
		}
	}
	// A failed step without a matching arc fails the execution whatever
	// no_next_is_error says.
	e := load(t, strings.NewReplacer("NNE", "false", "ONM", "quiet").Replace(noMatchPB))
	st, _ := started(t, e, nil)
	e.Apply(st, failed("start", 1, "x"), t0)
	if st.Status != ExecFailed {
		t.Fatalf("failed step: %s", st.Status)
	}
}

// Arcs and the step-level set read the DSL v2 output envelope; for an
// http step output.data is the parsed body.
const outputArcsPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: outarcs}
workflow:
  - step: start
    tool: {kind: http, url: "http://x/"}
    set: {ctx.page: "{{ output.data.page }}"}
    next:
      arcs:
        - {step: more, when: "{{ output.status == 'ok' and output.data.more }}"}
        - {step: last}
  - step: more
    tool: {kind: noop}
  - step: last
    tool: {kind: noop}
`

func TestArcsReadOutputEnvelope(t *testing.T) {
	e := load(t, outputArcsPB)
	for _, more := range []bool{true, false} {
		st, _ := started(t, e, nil)
		out, _, err := e.Apply(st, done("start", 1, map[string]any{"status_code": 200, "data": map[string]any{"page": 3, "more": more}}), t0)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "more", false: "last"}[more]
		if got := cmdSteps(out); !reflect.DeepEqual(got, []string{want}) || st.Ctx["page"] != 3 {
			t.Fatalf("more=%v: %v ctx %v", more, got, st.Ctx)
		}
	}
}
