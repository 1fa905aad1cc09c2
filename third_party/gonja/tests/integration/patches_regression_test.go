package integration_test

// Regression tests for the patches listed in PATCHES.md that are visible
// through rendering (plain Go tests, so they run under `go test -run`).

import (
	"strings"
	"testing"
	"time"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/exec"
)

func renderString(t *testing.T, src string, data map[string]any) string {
	t.Helper()
	tpl, err := gonja.FromString(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	out, err := tpl.ExecuteToString(exec.NewContext(data))
	if err != nil {
		t.Fatalf("render %q: %v", src, err)
	}
	return out
}

func TestPatchLexerFFFDNumber(t *testing.T) {
	// Patch 1 + 2: the 14-byte template of the report parses to an error
	// instead of exhausting memory.
	done := make(chan error, 1)
	go func() {
		_, err := gonja.FromString("{{ \uFFFD1.中 }}")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "unexpected character") {
			t.Fatalf("error = %v, want an 'unexpected character' syntax error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parsing {{ \\uFFFD1.中 }} did not finish")
	}
	// `1.中` is the integer 1 followed by an attribute access, as `1.abc`.
	if _, err := gonja.FromString("{{ 1.中 }}"); err != nil {
		t.Fatalf("{{ 1.中 }}: %v", err)
	}
}

func TestPatchWordwrapLinear(t *testing.T) {
	// Patch 3: same output as before the patch on ordinary text ...
	got := renderString(t, "{{ s | wordwrap(10) }}", map[string]any{"s": "aaa bbb ccc ddd\n\neee fffffffffffff g"})
	want := "aaa bbb\nccc ddd\n\neee\nfffffffffffff\ng"
	if got != want {
		t.Fatalf("wordwrap = %q, want %q", got, want)
	}
	got = renderString(t, "{{ s | wordwrap(5) }}", map[string]any{"s": "héé é"})
	if got != "héé é" {
		t.Fatalf("wordwrap counts runes: got %q", got)
	}
	// ... and linear time on a long paragraph (the quadratic version takes
	// minutes on 400000 words).
	long := strings.Repeat("ab ", 400_000)
	tpl, err := gonja.FromString("{{ s | wordwrap(1000000000) }}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		out, _ := tpl.ExecuteToString(exec.NewContext(map[string]any{"s": long}))
		done <- out
	}()
	select {
	case out := <-done:
		if out != strings.TrimSpace(long) {
			t.Fatalf("wordwrap of one long line changed it (len %d -> %d)", len(long), len(out))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wordwrap of 1.2 MB did not finish in 10s (quadratic)")
	}
}

// countingStringer counts how often its text form is asked for.
type countingStringer struct{ n *int }

func (c countingStringer) String() string { *c.n++; return "x" }

func TestPatchMethodCallDoesNotFormatReceiver(t *testing.T) {
	// Patch 4: a method call no longer converts its receiver to text to
	// prepare an error it does not return.
	n := 0
	out := renderString(t, "{{ s.upper() }}", map[string]any{"s": "abc", "c": countingStringer{&n}})
	if out != "ABC" {
		t.Fatalf("upper = %q", out)
	}
	out = renderString(t, "{{ d.keys() | length }}", map[string]any{"d": map[string]any{"a": countingStringer{&n}}})
	if out != "1" {
		t.Fatalf("keys|length = %q", out)
	}
	if n != 0 {
		t.Fatalf("receiver formatted %d times during successful method calls", n)
	}
	// The error for an unknown method still names the receiver.
	tpl, err := gonja.FromString("{{ s.nosuchmethod() }}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.ExecuteToString(exec.NewContext(map[string]any{"s": "abc"}))
	if err == nil || !strings.Contains(err.Error(), "unknown method 'nosuchmethod' for 'abc'") {
		t.Fatalf("unknown method error = %v", err)
	}
}

func TestPatchConditionalExpressionInsideExpressions(t *testing.T) {
	// Patch 5: Jinja2's `a if c else b` inside a dict, list, tuple,
	// parentheses, subscript and call or filter arguments used to fail to
	// parse ("Expected ,"/"Expected }"). Expected outputs are Jinja2 3.1's
	// for the same templates and data (tojson's separators aside: gonja
	// writes compact JSON, Jinja2 ", " and ": ").
	upper := func(s string) string { return strings.ToUpper(s) }
	cases := []struct {
		src  string
		data map[string]any
		want string
	}{
		{`{{ {"status": "ok" if x == 200 else "error", "code": x} | tojson }}`, map[string]any{"x": 200}, `{"code":200,"status":"ok"}`},
		{`{{ {"status": "ok" if x == 200 else "error", "code": x} | tojson }}`, map[string]any{"x": 500}, `{"code":500,"status":"error"}`},
		{`{{ [1 if x else 2, 3] | tojson }}`, map[string]any{"x": false}, `[2,3]`},
		{`{{ (1 if x else 2) + 1 }}`, map[string]any{"x": true}, `2`},
		{`{{ f("a" if x else "b") }}`, map[string]any{"x": true, "f": upper}, `A`},
		{`{{ ["a", "b"][0 if x else 1] }}`, map[string]any{"x": false}, `b`},
		{`{{ {"v": "a" if x == 1 else "b" if x == 2 else "c"} | tojson }}`, map[string]any{"x": 2}, `{"v":"b"}`},
		{`{{ "yes" if x else "no" if y else "neither" }}`, map[string]any{"x": false, "y": false}, `neither`},
		{`{{ {"s": e.status if e is defined else 0} | tojson }}`, map[string]any{}, `{"s":0}`},
		{`{{ items | join("," if x else ";") }}`, map[string]any{"x": false, "items": []string{"a", "b"}}, `a;b`},
		// The for filter keeps its meaning (not a conditional expression).
		{`{% for i in [1, 2, 3] if i > 1 %}{{ i }}{% endfor %}`, map[string]any{}, `23`},
	}
	for _, c := range cases {
		if got := renderString(t, c.src, c.data); got != c.want {
			t.Errorf("%s = %q, want %q", c.src, got, c.want)
		}
	}
	// A conditional without its condition is still a syntax error.
	if _, err := gonja.FromString(`{{ [1 if] }}`); err == nil {
		t.Error(`{{ [1 if] }} parsed`)
	}
}
