package dsl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// loadErr loads src and requires a *ValidationError.
func loadErr(t *testing.T, src string) *ValidationError {
	t.Helper()
	p, err := Load([]byte(src), "test.yaml")
	if err == nil {
		t.Fatalf("expected problems, got playbook %+v", p)
	}
	if p != nil {
		t.Error("a playbook was returned together with an error")
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T, want *ValidationError: %v", err, err)
	}
	if len(ve.Problems) == 0 {
		t.Fatal("ValidationError without problems")
	}
	return ve
}

func mustLoad(t *testing.T, src string) *Playbook {
	t.Helper()
	p, err := Load([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// find returns the problem at line with the given path whose message holds
// msg, or fails.
func find(t *testing.T, ps []Problem, line int, path, msg string) {
	t.Helper()
	for _, p := range ps {
		if p.Line == line && p.Path == path && strings.Contains(p.Message, msg) {
			return
		}
	}
	t.Errorf("no problem %d %s %q in:\n%s", line, path, msg, FormatProblems("test.yaml", ps))
}

func TestBrokenPlaybookReportsEveryProblem(t *testing.T) {
	_, err := LoadFile("testdata/invalid/broken.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	want := []struct {
		line int
		path string
		msg  string
	}{
		{5, "vars", "root vars is not canonical"},
		{11, "workflow[0].when", "put the condition on the incoming arc (next.arcs[].when"},
		{20, "workflow[0].tool[0].spec.policy.rules[0].then.to", `jump target "nowhere" is not a task of this step (tasks: fetch, parse)`},
		{22, "workflow[0].tool[1].kind", `unknown task kind "pyhton": did you mean "python"? (one of noop, http, python, postgres, playbook, workbook, duckdb, transfer, gcs, s3, secrets, nats, shell, subscription, artifact, result_fetch)`},
		{28, "workflow[0].next.arcs[1].step", `arc to unknown step "missing_step"`},
		{31, "workflow[2].step", `duplicate step name "finish" (first defined at line 29)`},
		{33, "triggers", `unknown root key "triggers"`},
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(ve.Problems), len(want), err)
	}
	for _, w := range want {
		find(t, ve.Problems, w.line, w.path, w.msg)
	}
	// Error() lists every problem as file:line: path: message, sorted by line.
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(ve.Problems) {
		t.Fatalf("Error() has %d lines:\n%v", len(lines), err)
	}
	for i, w := range want {
		prefix := fmt.Sprintf("testdata/invalid/broken.yaml:%d: %s: ", w.line, w.path)
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], prefix)
		}
	}
}

func TestYAMLSyntaxErrorHasLine(t *testing.T) {
	_, err := LoadFile("testdata/invalid/syntax.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 {
		t.Fatalf("err = %v", err)
	}
	// The flow mapping opened on line 7 is not closed: the parser finds
	// out at line 8, column 9, and says where the mapping started.
	find(t, ve.Problems, 8, "", "YAML syntax error: did not find expected ',' or '}' (while parsing a flow mapping that starts at line 7, column 11)")
	want := "testdata/invalid/syntax.yaml:8:9: YAML syntax error: did not find expected ',' or '}' (while parsing a flow mapping that starts at line 7, column 11)\n" +
		"      - step: end\n" +
		"            ^"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	cases := []struct {
		src  string
		line int
		msg  string
	}{
		{"apiVersion: noetl.io/v2\n  kind: Playbook\n", 2, "mapping values are not allowed"},
		{"a: 1\nb:\n  - x\n  y: 2\n", 4, "did not find expected '-' indicator"},
		{"a: 1\nb: 2\nc: @x\n", 3, "cannot start any token"},
		{"a: 1\nb: 2\nc: [1, 2}\n", 3, "did not find expected ',' or ']'"},
		{"a: 1\nb: 2\nc: *nope\n", 3, "unknown anchor 'nope'"},
		{"a: 1\n\tb: 2\n", 2, "tab character"},
	}
	for _, c := range cases {
		ve := loadErr(t, c.src)
		find(t, ve.Problems, c.line, "", c.msg)
	}
}

// A YAML syntax error names the broken line — not the line where the
// enclosing mapping starts, as the YAML library's message does — with its
// column, the line itself and a caret, and what was being read (as
// PyYAML names both); at the end of the file it points at the start of
// what is unfinished.
func TestYAMLSyntaxErrorPointsAtTheBrokenLine(t *testing.T) {
	for _, c := range []struct {
		src, want string
	}{
		// A key indented one blank too little, three lines below its
		// mapping's start (the library says "line 1").
		{"workflow:\n  - step: start\n    tool:\n      kind: noop\n     bad: x\n",
			"test.yaml:5:6: YAML syntax error: did not find expected key (while parsing a block mapping that starts at line 2, column 5)\n" +
				"         bad: x\n" +
				"         ^\n"},
		{"a:\n  b: 1\n c: 2\n",
			"test.yaml:3:2: YAML syntax error: did not find expected key (while parsing a block mapping that starts at line 1, column 1)\n" +
				"     c: 2\n" +
				"     ^\n"},
		{"key: value: other\n",
			"test.yaml:1:11: YAML syntax error: mapping values are not allowed in this context\n" +
				"    key: value: other\n" +
				"              ^\n"},
		// Columns count characters, and the caret keeps tabs.
		{"name: \"héllo\"\t@x\n",
			"test.yaml:1:15: YAML syntax error: found character that cannot start any token\n" +
				"    name: \"héllo\"\t@x\n" +
				"                 \t^\n"},
		// An unterminated quote: the end of the file, so the quote's start.
		{"a: 'unterminated\nb: 2\n",
			"test.yaml:1:4: YAML syntax error: found unexpected end of stream (while scanning a quoted scalar that starts at line 1, column 4)\n" +
				"    a: 'unterminated\n" +
				"       ^\n"},
	} {
		ve := loadErr(t, c.src)
		if got := FormatProblems("test.yaml", ve.Problems); got != c.want {
			t.Errorf("%q:\n%s\nwant\n%s", c.src, got, c.want)
		}
	}
}

func TestSingleProblems(t *testing.T) {
	const head = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\nworkflow:\n"
	cases := []struct {
		name, body string
		line       int
		path, msg  string
	}{
		{"step eval", "  - step: start\n    eval: x\n", 7, "workflow[0].eval", "tool[].spec.policy.rules"},
		{"step expr", "  - step: start\n    expr: x\n", 7, "workflow[0].expr", "when is the only conditional keyword"},
		{"step case", "  - step: start\n    case: []\n", 7, "workflow[0].case", "next.arcs[].when"},
		{"step sink", "  - step: start\n    tool: {kind: noop}\n    sink: {tool: postgres}\n", 8, "workflow[0].sink", "add a storage task"},
		{"step type", "  - step: start\n    type: python\n    code: x\n", 7, "workflow[0].type", "tool: {kind: <type>, ...}"},
		{"tool string", "  - step: start\n    tool: python\n    code: x\n", 7, "workflow[0].tool", "tool: {kind: python, ...}"},
		{"unknown step key", "  - step: start\n    tool: {kind: noop}\n    foo: 1\n", 8, "workflow[0].foo", `unknown step key "foo" (allowed: step, desc`},
		{"misspelt filter", "  - step: start\n    tool: {kind: noop, result: \"{{ workload.x | uppper }}\"}\n", 7, "workflow[0].tool.result", `no filter named 'uppper' (line 1, column 17); did you mean 'upper'?`},
		{"task field on step", "  - step: start\n    tool: {kind: noop}\n    url: x\n", 8, "workflow[0].url", "task fields go under tool"},
		{"step names loaded as the same identifier", "  - step: fetch-page\n    tool: {kind: noop}\n  - step: fetch/page\n    tool: {kind: noop}\n", 8, "workflow[1].step", `step names "fetch-page" and "fetch/page" are both loaded as "fetch_page"`},
		{"step missing name", "  - step: start\n  - desc: x\n", 7, "workflow[1].step", "step name is required"},
		{"unknown kind", "  - step: start\n    tool:\n      kind: ftp\n", 8, "workflow[0].tool.kind", `unknown task kind "ftp" (one of noop`},
		{"misspelt kind", "  - step: start\n    tool:\n      kind: postgress\n", 8, "workflow[0].tool.kind", `unknown task kind "postgress": did you mean "postgres"? (one of noop`},
		{"misspelt step key", "  - step: start\n    tool: {kind: noop}\n    nxet: end\n", 8, "workflow[0].nxet", `unknown step key "nxet": did you mean "next"? (allowed: step, desc`},
		{"kind needs an outside service", "  - step: start\n    tool:\n      kind: snowflake\n      query: x\n", 8, "workflow[0].tool.kind", `task kind "snowflake" is not available on this stack: it needs a Snowflake account`},
		{"kind key nobody reads", "  - step: start\n    tool:\n      kind: http\n      url: x\n      code: y\n", 10, "workflow[0].tool.code", `task key "code" is not read by kind http (it reads: auth, body,`},
		{"step key on a task", "  - step: start\n    tool:\n      kind: noop\n      next: x\n", 9, "workflow[0].tool.next", "next is a step key, not a task key: move it to the step, beside tool:"},
		{"missing kind", "  - step: start\n    tool:\n      code: x\n", 7, "workflow[0].tool.kind", "task needs a kind"},
		{"legacy task type", "  - step: start\n    tool:\n      type: python\n      code: x\n", 8, "workflow[0].tool.type", "rename it to kind"},
		{"http url", "  - step: start\n    tool:\n      kind: http\n", 7, "workflow[0].tool.url", "url is required for a http task"},
		{"python code", "  - step: start\n    tool: [{name: a, kind: python}]\n", 7, "workflow[0].tool[0].code", "one of code, code_b64, script is required for a python task"},
		{"postgres command", "  - step: start\n    tool:\n      kind: postgres\n      auth: pg\n", 7, "workflow[0].tool.command", "one of command, commands, command_b64, script is required for a postgres task"},
		{"playbook path", "  - step: start\n    tool: {kind: playbook}\n", 7, "workflow[0].tool.path", "one of path, catalog_id is required for a playbook task"},
		{"workbook missing entry", "  - step: start\n    tool: {kind: workbook, name: nope}\n", 7, "workflow[0].tool.name", `workbook entry "nope" does not exist`},
		{"workbook no name", "  - step: start\n    tool: {kind: workbook}\n", 7, "workflow[0].tool.name", "needs name"},
		{"duplicate labels", "  - step: start\n    tool:\n      - {name: a, kind: noop}\n      - {name: a, kind: noop}\n", 9, "workflow[0].tool[1].name", `duplicate task label "a"`},
		{"synthetic label clash", "  - step: start\n    tool:\n      - {name: task_1, kind: noop}\n      - {kind: noop}\n", 9, "workflow[0].tool[1].name", `duplicate task label "task_1"`},
		{"bad do", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then: {do: redo}\n", 13, "workflow[0].tool.spec.policy.rules[0].then.do", `unknown then.do "redo"`},
		{"attempts 0", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then:\n                do: retry\n                attempts: 0\n", 15, "workflow[0].tool.spec.policy.rules[0].then.attempts", "attempts ≥ 1"},
		{"bad backoff", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then:\n                do: retry\n                backoff: fibonacci\n", 15, "workflow[0].tool.spec.policy.rules[0].then.backoff", "none, linear or exponential"},
		{"negative delay", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then:\n                do: retry\n                delay: -1\n", 15, "workflow[0].tool.spec.policy.rules[0].then.delay", "delay must be ≥ 0"},
		{"string delay", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then:\n                do: retry\n                delay: soon\n", 15, "workflow[0].tool.spec.policy.rules[0].then.delay", "must be a number"},
		{"jump without to", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - else:\n                then: {do: jump}\n", 13, "workflow[0].tool.spec.policy.rules[0].else.then.to", "jump needs to"},
		{"to without jump", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - else:\n                then: {do: fail, to: start_task}\n", 13, "workflow[0].tool.spec.policy.rules[0].else.then.to", "only valid with do: jump"},
		{"rule without then", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n", 12, "workflow[0].tool.spec.policy.rules[0].then", "rule needs then"},
		{"else with an unknown key", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - else: {do: continue, go: x}\n", 12, "workflow[0].tool.spec.policy.rules[0].else.do", "write {else: {then: {...}}}"},
		{"policy without rules", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy: {}\n", 10, "workflow[0].tool.spec.policy.rules", "spec.policy needs rules"},
		{"allow in task", "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - else:\n                then: {allow: true}\n", 13, "workflow[0].tool.spec.policy.rules[0].else.then.allow", "only valid in step admission"},
		{"admit without allow", "  - step: start\n    spec:\n      policy:\n        admit:\n          rules:\n            - when: x\n              then: {do: continue}\n    tool: {kind: noop}\n", 12, "workflow[0].spec.policy.admit.rules[0].then.do", "admit rules only decide allow"},
		{"failure mode", "  - step: start\n    spec:\n      policy:\n        failure: {mode: sometimes}\n    tool: {kind: noop}\n", 9, "workflow[0].spec.policy.failure.mode", "fail_fast or best_effort"},
		{"step policy rules", "  - step: start\n    spec:\n      policy:\n        rules: []\n    tool: {kind: noop}\n", 9, "workflow[0].spec.policy.rules", "not allowed in step.spec.policy"},
		{"loop iterator", "  - step: start\n    loop:\n      in: \"{{ xs }}\"\n    tool: {kind: noop}\n", 7, "workflow[0].loop.iterator", "loop.iterator is required"},
		{"loop in", "  - step: start\n    loop:\n      iterator: x\n    tool: {kind: noop}\n", 7, "workflow[0].loop.in", "loop.in is required"},
		{"loop mode", "  - step: start\n    loop:\n      in: [1]\n      iterator: x\n      spec: {mode: random}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.mode", "sequential, parallel or cursor"},
		{"max_in_flight 0", "  - step: start\n    loop:\n      in: [1]\n      iterator: x\n      spec: {mode: parallel, max_in_flight: 0}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.max_in_flight", "at least 1"},
		{"loop without tool", "  - step: start\n    loop: {in: [1], iterator: x}\n", 7, "workflow[0].loop", "needs tool"},
		{"loop unquoted template", "  - step: start\n    loop:\n      in: {{ xs }}\n      iterator: x\n    tool: {kind: noop}\n", 8, "workflow[0].loop.in", "quote the template"},
		{"parallel step set_ctx", "  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel}}\n    tool: {kind: noop}\n    set_ctx: {a: 1}\n", 9, "workflow[0].set_ctx.a", "loop.spec.allow_set_ctx: true"},
		{"parallel policy set_ctx", "  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel}}\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - else:\n                then: {do: continue, set_ctx: {a: 1}}\n", 14, "workflow[0].tool.spec.policy.rules[0].else.then.set_ctx.a", "allow_set_ctx"},
		{"next mode", "  - step: start\n    next:\n      spec: {mode: all}\n      arcs: [{step: start}]\n", 8, "workflow[0].next.spec.mode", "exclusive or inclusive"},
		{"arc on", "  - step: start\n    next:\n      arcs:\n        - step: start\n          on: step.maybe\n", 10, "workflow[0].next.arcs[0].on", "arc on must be one of"},
		{"arc unknown key", "  - step: start\n    next:\n      arcs:\n        - step: start\n          goto: x\n", 10, "workflow[0].next.arcs[0].goto", `unknown arc key "goto"`},
		{"arc typo suggestion", "  - step: start\n    next: {arcs: [{step: strat}]}\n", 7, "workflow[0].next.arcs[0].step", `(did you mean "start"?)`},
		{"next unknown key", "  - step: start\n    next:\n      arc: []\n", 8, "workflow[0].next.arc", `unknown next key "arc"`},
		{"duplicate key", "  - step: start\n    desc: a\n    desc: b\n", 8, "workflow[0].desc", `duplicate key "desc" (first at line 7)`},
		{"args not mapping", "  - step: start\n    args: [1]\n    tool: {kind: noop}\n", 7, "workflow[0].args", "must be a mapping"},
		{"unquoted template value", "  - step: start\n    tool:\n      kind: http\n      url: {{ api }}\n", 9, "workflow[0].tool.url", "quote the template"},
		{"step scalar", "  - start\n", 6, "workflow[0]", "a step must be a mapping"},
		{"empty tool", "  - step: start\n    tool:\n", 7, "workflow[0].tool", "tool is empty"},
		{"timeout string", "  - step: start\n    tool: {kind: noop, timeout: soon}\n", 7, "workflow[0].tool.timeout", "must be a number"},
		{"retry on_success python", "  - step: start\n    tool: {kind: python, code: x}\n    retry:\n      on_success:\n        while: \"{{ response.hasMore }}\"\n", 9, "workflow[0].retry.on_success", "cannot be normalised (task \"start_task\" is kind python"},
		{"retry on_success merge", "  - step: start\n    tool: {kind: http, url: x}\n    retry:\n      on_success:\n        while: \"{{ response.hasMore }}\"\n        collect: merge\n", 11, "workflow[0].retry.on_success.collect", "cannot be normalised (collect strategy \"merge\""},
		{"retry unknown key", "  - step: start\n    tool: {kind: noop}\n    retry: {tries: 3}\n", 8, "workflow[0].retry.tries", `unknown retry key "tries"`},
		{"loop in plain string", "  - step: start\n    loop: {in: users, iterator: u}\n    tool: {kind: noop}\n", 7, "workflow[0].loop.in", "plain string \"users\""},
		{"step vars not a mapping", "  - step: start\n    vars: [a]\n", 7, "workflow[0].vars", "must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := loadErr(t, head+c.body)
			find(t, ve.Problems, c.line, c.path, c.msg)
		})
	}
}

func TestRootProblems(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"empty", "", 1, "", "empty document"},
		{"comments only", "# nothing\n", 1, "", "empty document"},
		{"not a mapping", "- a\n- b\n", 1, "", "the playbook document must be a mapping"},
		{"missing everything", "foo: 1\n", 1, "foo", `unknown root key "foo"`},
		{"missing apiVersion", "kind: Playbook\nmetadata: {name: x}\nworkflow: [{step: start}]\n", 1, "apiVersion", "apiVersion is required"},
		{"bad apiVersion", "apiVersion: noetl.io/v3\nkind: Playbook\nmetadata: {name: x}\nworkflow: [{step: start}]\n", 1, "apiVersion", "unsupported apiVersion"},
		{"bad kind", "apiVersion: noetl.io/v2\nkind: Workflow\nmetadata: {name: x}\nworkflow: [{step: start}]\n", 2, "kind", "kind must be Playbook"},
		{"missing name", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {path: x}\nworkflow: [{step: start}]\n", 3, "metadata.name", "metadata.name is required"},
		{"empty workflow", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow: []\n", 4, "workflow", "non-empty list"},
		{"missing workflow", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\n", 1, "workflow", "workflow is required"},
		{"workload list", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkload: [1]\nworkflow: [{step: start}]\n", 4, "workload", "workload must be a mapping"},
		{"keychain map", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nkeychain: {a: 1}\nworkflow: [{step: start}]\n", 4, "keychain", "keychain must be a list"},
		{"two documents", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow: [{step: start}]\n---\na: 1\n", 5, "", "more than one YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := loadErr(t, c.src)
			find(t, ve.Problems, c.line, c.path, c.msg)
		})
	}
}

func TestProblemsAreCollectedNotFirstOnly(t *testing.T) {
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: x}
workflow:
  - step: start
    tool:
      - {name: a, kind: http}
      - {name: b, kind: python}
      - {name: c, kind: nope}
    next: {arcs: [{step: x1}, {step: x2}]}
`
	ve := loadErr(t, src)
	if len(ve.Problems) != 5 {
		t.Errorf("want 5 problems, got:\n%v", ve)
	}
	for i := 1; i < len(ve.Problems); i++ {
		if ve.Problems[i].Line < ve.Problems[i-1].Line {
			t.Errorf("problems not sorted by line:\n%v", ve)
		}
	}
}

func TestFormatProblems(t *testing.T) {
	got := FormatProblems("f.yaml", []Problem{{Line: 3, Path: "a.b", Message: "m1"}, {Path: "c", Message: "m2"}, {Line: 1, Message: "m3"}})
	want := "f.yaml:3: a.b: m1\nf.yaml: c: m2\nf.yaml:1: m3\n"
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
	ve := &ValidationError{File: "f.yaml", Problems: []Problem{{Line: 2, Path: "x", Message: "y"}}}
	if ve.Error() != "f.yaml:2: x: y" {
		t.Errorf("Error() = %q", ve.Error())
	}
	_, err := Load([]byte("a: ["), "")
	if err == nil || !strings.HasPrefix(err.Error(), "<input>:") {
		t.Errorf("unnamed source: %v", err)
	}
}

func TestAliasBombIsReported(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkload:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("workflow: [{step: start}]\n")
	ve := loadErr(t, b.String())
	found := false
	for _, p := range ve.Problems {
		if strings.Contains(p.Message, "document too large") {
			found = true
		}
	}
	if !found {
		t.Errorf("no alias-bomb problem:\n%v", ve)
	}
}

func TestRecursiveAliasIsReported(t *testing.T) {
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkload: &w\n  self: *w\nworkflow: [{step: start}]\n"
	_, err := Load([]byte(src), "t")
	if err == nil {
		// yaml.v3 may or may not build the cycle; either way Load must not hang or panic.
		return
	}
	if !strings.Contains(err.Error(), "alias") && !strings.Contains(err.Error(), "anchor") {
		t.Errorf("err = %v", err)
	}
}

func TestAliasMultipliedWorkflowIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nx:\n  t: &t {kind: python, code: \"result = 1\", args: {a: [1, 2, 3, 4, 5, 6, 7, 8]}}\n  l: &l [")
	for i := 0; i < 2000; i++ {
		b.WriteString("*t, ")
	}
	b.WriteString("*t]\n  s: &s {step: start, tool: *l}\nworkflow: [")
	for i := 0; i < 2000; i++ {
		b.WriteString("*s, ")
	}
	b.WriteString("*s]\n")
	ve := loadErr(t, b.String())
	found := false
	for _, p := range ve.Problems {
		found = found || strings.Contains(p.Message, "document too large")
	}
	if !found {
		t.Errorf("no budget problem in %d problems", len(ve.Problems))
	}
}

// Names holding control characters (terminal escapes, a right-to-left
// override, a newline) are refused at load, naming the field (docs/security.md "Rooms", display safety).
func TestControlCharactersInNames(t *testing.T) {
	src := "apiVersion: noetl.io/v2\nkind: Playbook\n" +
		"metadata: {name: \"evil\\e[2J\\a\", path: \"tests/\\u202Egnp\", version: \"1\\n2\"}\n" +
		"workflow:\n  - step: start\n    tool:\n      - \"lab\\u009bel\": {kind: noop}\n"
	ve := loadErr(t, src)
	got := map[string]string{}
	for _, p := range ve.Problems {
		got[p.Path] = p.Message
	}
	for path, r := range map[string]string{"metadata.name": "U+001B", "metadata.path": "U+202E", "metadata.version": "U+000A"} {
		if !strings.Contains(got[path], r) || !strings.Contains(got[path], "control character") {
			t.Errorf("%s: %q, want a refusal naming %s (all: %v)", path, got[path], r, got)
		}
	}
	// The label is refused too (not an identifier), and nothing quotes
	// the raw characters back.
	if !strings.Contains(ve.Error(), `task label "lab\u009bel" must be an identifier`) {
		t.Errorf("label: %s", ve.Error())
	}
	if strings.ContainsAny(ve.Error(), "\x1b\a\u202e\u009b") {
		t.Errorf("the error itself carries the raw characters: %q", ve.Error())
	}
}

// A template that does not parse is reported at its own line in the YAML
// — inside a block scalar, the line of the template's broken line — with
// the column and a caret when the source shows the template as written;
// never with the template library's bogus "Line: 0 Col: 0".
func TestTemplateErrorAtItsLine(t *testing.T) {
	const head = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkflow:\n  - step: start\n    tool:\n"
	for _, c := range []struct {
		body, want string
	}{
		{"      kind: shell\n      command: |\n        echo a\n        echo {{ workload.x }}\n        echo {{ y ) }}\n",
			"test.yaml:11: workflow[0].tool.command: template does not parse: template line 3 of 4 \"echo {{ y ) }}\": '}}' expected here: unexpected delimiter \")\"\n" +
				"            echo {{ y ) }}\n"},
		{"      kind: noop\n      result: \"{{ x + }}\"\n",
			"test.yaml:8:23: workflow[0].tool.result: template does not parse: template \"{{ x + }}\": expected either a number, string, keyword or identifier. (Line: 1 Col: 8, near \"}}\")\n" +
				"          result: \"{{ x + }}\"\n" +
				"                          ^\n"},
		{"      kind: shell\n      command: |\n        echo a\n        {% if x %}\n        echo b\n",
			// An unclosed block: the template library names its end.
			"test.yaml:11:15: workflow[0].tool.command: template does not parse: template line 3 of 4 \"echo b\": Unable to parse controlStructure \"if\": Unexpected EOF, expected tag elif or else or endif. (Line: 3 Col: 7, near \"\")\n" +
				"            echo b\n" +
				"                  ^\n"},
	} {
		ve := loadErr(t, head+c.body)
		got := FormatProblems("test.yaml", ve.Problems)
		if got != c.want {
			t.Errorf("%q:\n%s\nwant\n%s", c.body, got, c.want)
		}
		if strings.Contains(got, "Line: 0") {
			t.Errorf("%q: %s", c.body, got)
		}
	}
}
