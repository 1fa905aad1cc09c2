package template

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestJobNamespace: NoETL's render context defines job = {uuid,
// execution_id, id}, each the execution id (noetl/core/dsl/engine/executor/
// state.py, get_render_context); playbooks pass {{ job.execution_id }} to
// child playbooks and SQL ({{ job.uuid }}). A workload key or an Extra
// entry named job never replaces it.
func TestJobNamespace(t *testing.T) {
	s := NewScope(ScopeParams{ExecutionID: "e-42", Workload: map[string]any{"job": "workload's"}, Extra: map[string]any{"job": "extra's"}})
	runCases(t, s, []renderCase{
		{"{{ job.uuid }}", "e-42"},
		{"{{ job.execution_id }}", "e-42"},
		{"{{ job.id }}", "e-42"},
		{"INSERT ... VALUES ('{{ job.uuid }}')", "INSERT ... VALUES ('e-42')"},
	})
	if got := mustRender(t, "{{ job }}", s); !reflect.DeepEqual(got, map[string]any{"uuid": "e-42", "execution_id": "e-42", "id": "e-42"}) {
		t.Fatalf("job = %#v", got)
	}
	names, err := Names("{{ job.uuid }}")
	if err != nil || !reflect.DeepEqual(names, []string{"job"}) {
		t.Fatalf("Names = %v, %v", names, err)
	}
}

// TestConditionalExpressionInLiterals: Jinja2's `a if c else b` inside a
// dict or list literal (third_party/gonja patch 5), as NoETL's
// google_id_token fixtures write it in SQL:
// $${{ {"status": "success" if r.status_code == 200 else "error", ...} | tojson }}$$.
func TestConditionalExpressionInLiterals(t *testing.T) {
	s := NewScope(ScopeParams{Results: map[string]any{"call": map[string]any{"status_code": 200, "data": map[string]any{"data": []any{1, 2}}}}})
	runCases(t, s, []renderCase{
		{`{{ {"status": "success" if call.status_code == 200 else "error", "n": call.data.data | length} }}`, map[string]any{"status": "success", "n": 2}},
		{`{{ {"status": "ok" if call.status_code >= 400 else "error"} }}`, map[string]any{"status": "error"}},
		{`{{ [1 if call.status_code == 200 else 2, 3] }}`, []any{1, 3}},
		{`{{ {"s": error.status if error is defined else 0} }}`, map[string]any{"s": 0}},
		{`{{ ("a" if call.status_code == 200 else "b") ~ "!" }}`, "a!"},
		{`{{ "x" if call.missing else "y" if call.status_code == 200 else "z" }}`, "y"},
	})
	names, err := Names(`{{ {"s": a if b else c} }}`)
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Fatalf("Names = %v, %v", names, err)
	}
}

// TestVarsIsCtx: NoETL's legacy step vars are loaded as set_ctx, so
// vars.<name> reads ctx; any other bare name called vars wins over it.
func TestVarsIsCtx(t *testing.T) {
	s := NewScope(ScopeParams{Ctx: map[string]any{"user": "ann"}})
	runCases(t, s, []renderCase{{"{{ vars.user }}", "ann"}, {"{{ ctx.user }}", "ann"}})
	s = NewScope(ScopeParams{Ctx: map[string]any{"user": "ann"}, Workload: map[string]any{"vars": map[string]any{"user": "wl"}}})
	runCases(t, s, []renderCase{{"{{ vars.user }}", "wl"}})
}

// TestParseErrorNamesTheLine: a parse error in a long multi-line template
// (a shell script) quotes the line that broke, not the script's head, and
// Go-template markup (docker --format "{{.ID}}", as noetl/ops automation
// playbooks write it) gets an escape that works.
func TestParseErrorNamesTheLine(t *testing.T) {
	script := "set -e\nNAME=\"{{ workload.name }}\"\necho start\ndocker images --format \"{{.ID}}\" | xargs -r docker rmi -f\necho done"
	err := Check(script)
	if err == nil {
		t.Fatal("Go-template markup parsed as Jinja")
	}
	msg := err.Error()
	for _, want := range []string{`template line 4 of 5 "docker images --format \"{{.ID}}\"`, "Go-template syntax", `{{ '{{.ID}}' }}`} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "set -e") {
		t.Fatalf("message quotes the script's head: %q", msg)
	}
	fixed := strings.Replace(script, `"{{.ID}}"`, `"{{ '{{.ID}}' }}"`, 1)
	got := mustRender(t, fixed, NewScope(ScopeParams{Workload: map[string]any{"name": "x"}}))
	if !strings.Contains(got.(string), `--format "{{.ID}}"`) {
		t.Fatalf("the escape did not keep the markup literal: %q", got)
	}
	if one := Check("{{ .ID }}"); one == nil || strings.Contains(one.Error(), "template line") {
		t.Fatalf("one-line template: %v", one)
	}
}

// TestLexerErrorNamesTheLine: the template lexer names no line for a
// character it cannot read (NoETL's deploy_gateway_kind fixture escapes
// docker's markup with Go's backquotes, '{{`{{json .}}`}}', which Jinja2
// refuses too): the message quotes the first line whose markup holds it.
func TestLexerErrorNamesTheLine(t *testing.T) {
	script := "echo \"{{ workload.a }}\"\nset -e\nINFO=$(docker system df --format '{{`{{json .}}`}}')\necho done"
	err := Check(script)
	if err == nil {
		t.Fatal("backquotes in markup parsed")
	}
	if !strings.Contains(err.Error(), "template line 3 of 4 \"INFO=$(docker system df") {
		t.Fatalf("message %q does not name line 3", err.Error())
	}
}

// A parse error the template library gives no position ("(Line: 0 Col:
// 0, near ...)") reads without that suffix and, in a template of several
// lines, names the line that holds the offending delimiter; Line and
// Column give the position the library does know.
func TestParseErrorPositions(t *testing.T) {
	err := Check("echo a\necho {{ workload.x }}\necho {{ y ) }}\n")
	var te *Error
	if !errors.As(err, &te) {
		t.Fatalf("Check: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "Line: 0") || !strings.Contains(msg, `template line 3 of 4 "echo {{ y ) }}": '}}' expected here: unexpected delimiter ")"`) {
		t.Errorf("Error() = %q", msg)
	}
	if te.Line() != 3 || te.Column() != 0 {
		t.Errorf("Line, Column = %d, %d, want 3, 0", te.Line(), te.Column())
	}
	err = Check("{{ x + }}")
	if !errors.As(err, &te) || te.Line() != 0 || te.Column() != 8 {
		t.Errorf("one line: %v: line %d column %d, want 0 and 8", err, te.Line(), te.Column())
	}
	if got := withoutNoPosition(`'}}' expected here (Line: 0 Col: 0, near "Unexpected delimiter ")"")`); got != `'}}' expected here: unexpected delimiter ")"` {
		t.Errorf("withoutNoPosition = %q", got)
	}
	if got := withoutNoPosition(`x (Line: 2 Col: 3, near "y")`); got != `x (Line: 2 Col: 3, near "y")` {
		t.Errorf("a real position was dropped: %q", got)
	}
	// An unknown filter suggests the nearest one.
	if err := Check("{{ items | lenght }}"); err == nil || !strings.Contains(err.Error(), "no filter named 'lenght' (line 1, column 12); did you mean 'length'?") {
		t.Errorf("unknown filter: %v", err)
	}
}
