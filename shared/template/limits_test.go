package template

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Issue 10 item 1: no template may exhaust memory or run past its budget.
// Every attack below must fail with an error wrapping ErrLimit, quickly,
// and without allocating more than a small multiple of MaxAllocBytes.

// tightLimits keeps the bounded cases fast and their allocation small
// enough to measure.
var tightLimits = Limits{
	Timeout:          5 * time.Second,
	MaxOutputBytes:   1 << 20,
	MaxItems:         100_000,
	MaxValueBytes:    4 << 20,
	MaxAllocBytes:    32 << 20,
	MaxTemplateBytes: 64 << 10,
	MaxNesting:       64,
}

// allocBound is what a refused render may allocate in total under
// tightLimits (gonja's own garbage included).
const allocBound = 256 << 20

// renderMeasured renders tmpl and reports the bytes allocated and the time
// taken.
func renderMeasured(tmpl string, s Scope) (any, error, uint64, time.Duration) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	v, err := Render(tmpl, s)
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	return v, err, m1.TotalAlloc - m0.TotalAlloc, d
}

func TestLimitAttacks(t *testing.T) {
	withLimits(t, tightLimits)
	s := Scope{"x": "A", "n": 3}
	cases := []struct{ name, tmpl, want string }{
		// Issue 10: nested and single-expression values.
		{"nested list product", "{{ [[0] * 100000] * 100000 }}", "value larger than"},
		{"nested list product as text", "x{{ [[0] * 100000] * 100000 }}", "value larger than"},
		{"nested list product never printed", "{{ ([[0] * 10000] * 10000) | length }}", "value larger than"},
		{"center", "{{ 'x'|center(300000000) }}", "center() would build"},
		{"center float width", "{{ 'x'|center(3e8) }}", "center() would build"},
		{"indent", "{{ 'a\nb\nc'|indent(300000000) }}", "indent() would build"},
		{"indent string", "{{ ('a\n' * 100000)|indent('x' * 100) }}", "indent() would build"},
		{"replace empty old", "{{ ('ab' * 1000)|replace('', 'x' * 1000) }}", "replace() would build"},
		{"replace", "{{ ('ab' * 100000)|replace('a', 'x' * 100) }}", "replace() would build"},
		{"join separator", "{{ range(1000)|join('x' * 10000) }}", "join() would build"},
		{"join string input", "{{ ('x' * 1000)|join('y' * 10000) }}", "join() would build"},
		{"format width", "{{ '%999999999d'|format(1) }}", "printf-style formatting"},
		{"percent width", "{{ '%999999999d' % 1 }}", "printf-style formatting"},
		{"percent precision", "{{ '%.999999999f' % 1.5 }}", "printf-style formatting"},
		{"percent many args", "{{ ('%s' * 20000) % ((x * 100,) * 20000) }}", "printf-style formatting"},
		{"string repeat", "{{ 'x' * 100000000 }}", "string longer than"},
		{"string concat doubling", "{% set ns = namespace(s='x' * 1000) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "longer than"},
		{"tilde doubling", "{% set ns = namespace(s='x' * 1000) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "longer than"},
		{"list concat growth", "{% set ns = namespace(l=range(1000)|list) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", "longer than"},
		{"range", "{{ range(100000000) }}", "range()"},
		{"tojson indent", "{{ [1, 2]|tojson(indent=1000000000) }}", "tojson indent"},
		{"tojson pretty deep", "{{ [[[[[[[[[[1]]]]]]]]]]|tojson(indent='x' * 500000) }}", "tojson would build"},
		{"batch fill", "{{ [1]|batch(100000000, 0) }}", "batch()"},
		{"slice count", "{{ [1]|slice(100000000) }}", "slice()"},
		{"int of huge digit string", "{{ ('9' * 100000)|int }}", "int()"},
		{"list of a long string", "{{ ('x' * 1000000)|list|length }}", "list longer than"},
		{"batch of a long string", "{{ ('x' * 1000000)|batch(3)|length }}", "list longer than"},
		{"map over a long string", "{{ ('x' * 1000000)|map('upper')|list|length }}", "list longer than"},
		{"str.center", "{{ x.center(1000000000) }}", "str.center()"},
		{"str.ljust", "{{ x.ljust(1000000000) }}", "str.ljust()"},
		{"str.rjust", "{{ x.rjust(1000000000) }}", "str.rjust()"},
		{"str.zfill", "{{ x.zfill(1000000000) }}", "str.zfill()"},
		{"str.expandtabs", "{% set t = '\t' * 1000 %}{{ t.expandtabs(100000) }}", "str.expandtabs()"},
		{"str.format width", "{% set f = '{:>999999999}' %}{{ f.format(1) }}", "str.format()"},
		{"str.join", "{% set sep = 'x' * 10000 %}{{ sep.join(range(1000)|map('string')) }}", "str.join()"},
		{"str.replace", "{% set v = 'a' * 100000 %}{{ v.replace('a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}", "str.replace()"},
		// Values built from shared parts: exponential logical size.
		{"doubling list printed", "{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}", "value larger than"},
		{"doubling list compared", "{% set ns = namespace(l=[1]) %}{% for i in range(20) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{% set a = ns.l %}{{ a == a }}", "value larger than"},
		{"doubling list method receiver", "{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{% set a = ns.l %}{{ a.copy() | length }}", "value larger than"},
		{"doubling list string compare", "{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ 'a' < ns.l }}", "value larger than"},
		{"doubling list through a test", "{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l is eq(ns.l) }}", "value larger than"},
		{"doubling list in a filter", "{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l | string }}", "value larger than"},
		{"doubling dict", "{% set ns = namespace(d={}) %}{% for i in range(60) %}{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}{{ ns.d }}", "value larger than"},
		// Depth and cycles: gonja's string form recurses once per level.
		{"deep list", "{% set ns = namespace(l=[1]) %}{% for i in range(5000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}", "nested deeper than"},
		{"self-containing namespace", "{% set ns = namespace() %}{% set ns.x = ns %}{{ ns }}", "nested deeper than"},
		{"self-containing namespace in a list", "{% set ns = namespace() %}{% set ns.x = [ns] %}{{ ns | tojson }}", "nested deeper than"},
		{"endless recursive loop", "{% set ns = namespace() %}{% set ns.c = [ns] %}{% for x in [ns] recursive %}{{ loop(x.c) }}{% endfor %}", "deeper than"},
		// Total allocation: values that stay alive across iterations.
		{"append in a loop", "{% set l = [] %}{% for i in range(100000) %}{% do l.append([1,2,3,4,5,6,7,8,9,10]) %}{% endfor %}", "built more than"},
		{"namespace accumulation", "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [[1,2,3,4,5,6,7,8,9,10]] %}{% endfor %}", "built more than"},
		{"namespace nesting", "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l, [1,2,3,4,5,6,7,8,9,10]] %}{% endfor %}", "nested deeper than"},
		{"loop iterations", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "built more than"},
		// Template text.
		{"long template", "{{ x }}" + strings.Repeat(" ", 70000), "template longer than"},
		{"deep parentheses", "{{ " + strings.Repeat("(", 65) + "1" + strings.Repeat(")", 65) + " }}", "nested deeper than"},
		{"deep brackets", "{{ " + strings.Repeat("[", 65) + "1" + strings.Repeat("]", 65) + " }}", "nested deeper than"},
		{"deep calls", "{{ " + strings.Repeat("dict(a=", 65) + "1" + strings.Repeat(")", 65) + " }}", "nested deeper than"},
		{"deep blocks", strings.Repeat("{% if true %}", 65) + strings.Repeat("{% endif %}", 65), "nested deeper than"},
		{"deep set blocks", strings.Repeat("{% set a %}", 65) + strings.Repeat("{% endset %}", 65), "nested deeper than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err, alloc, d := renderMeasured(c.tmpl, s)
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v, want ErrLimit", err)
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("err %T is not an *Error", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %q, want it to mention %q", err, c.want)
			}
			if alloc > allocBound {
				t.Errorf("allocated %d MiB before refusing (bound %d MiB)", alloc>>20, allocBound>>20)
			}
			if d > 4*time.Second {
				t.Errorf("took %s before refusing", d)
			}
		})
	}
}

func TestLexerBugTemplate(t *testing.T) {
	// The reproducer of README "Security": U+FFFD, a digit, a dot, a multi-byte
	// character. It used to allocate until the process died; now it is an
	// ordinary syntax error, from Check (validator) and Render alike.
	for _, tmpl := range []string{"{{ \uFFFD1.中 }}", "{{ \uFFFD1.é }}", "a{{ \uFFFD1.中 }}b", "{% if \uFFFD1.中 %}{% endif %}"} {
		done := make(chan [2]error, 1)
		go func() {
			_, rerr := Render(tmpl, Scope{})
			done <- [2]error{Check(tmpl), rerr}
		}()
		select {
		case errs := <-done:
			for i, err := range errs {
				var te *Error
				if !errors.As(err, &te) || !strings.Contains(err.Error(), "unexpected character") {
					t.Errorf("%q (%s): err = %v, want an 'unexpected character' *Error", tmpl, []string{"Check", "Render"}[i], err)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: no answer in 10s", tmpl)
		}
	}
	// `1.中` (no U+FFFD before it) is an attribute access, as in Jinja2.
	if v := mustRender(t, "{{ 1.中 }}", Scope{}); v != nil {
		t.Errorf("{{ 1.中 }} = %#v, want undefined", v)
	}
}

func TestCheckRefusesHostileTemplates(t *testing.T) {
	withLimits(t, tightLimits)
	for _, tmpl := range []string{
		"{{ x }}" + strings.Repeat(" ", 70000),
		"{{ " + strings.Repeat("(", 100000) + "1" + " }}",
		strings.Repeat("{% for i in x %}", 1000),
	} {
		start := time.Now()
		err := Check(tmpl)
		if !errors.Is(err, ErrLimit) {
			t.Errorf("Check(%.40q…): %v, want ErrLimit", tmpl, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Check(%.40q…) took %s", tmpl, d)
		}
	}
	// Under the limits, a deep but legal template still parses.
	if err := Check("{{ " + strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60) + " }}"); err != nil {
		t.Errorf("60 levels: %v", err)
	}
	if err := Check("{% set a = (1) %}" + strings.Repeat("{% if a %}", 60) + strings.Repeat("{% endif %}", 60)); err != nil {
		t.Errorf("60 blocks after an assigning set: %v", err)
	}
}

func TestLimitsLeaveOrdinaryTemplatesAlone(t *testing.T) {
	withLimits(t, tightLimits)
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "name": "row", "tags": []any{"a", "b"}}
	}
	s := NewScope(ScopeParams{Workload: map[string]any{"rows": rows, "text": strings.Repeat("word ", 20000)}})
	runCases(t, s, []renderCase{
		{"{{ rows | length }}", 2000},
		{"{% for r in rows %}{{ rows | length }}{% endfor %}", strings.Repeat("2000", 2000)},
		{"{{ rows | map(attribute='id') | sum }}", 1999 * 2000 / 2},
		{"{{ (rows | first).tags }}", []any{"a", "b"}},
		{"{{ range(100000) | length }}", 100000},
		{"{{ text | wordwrap(79) | length > 0 }}", true},
		{"{{ 'x' | center(11) }}", "     x     "},
		{"{{ '%05d' % 42 }}", "00042"},
		{"{{ [[1, 2]] * 3 }}", []any{[]any{1, 2}, []any{1, 2}, []any{1, 2}}},
		{"{% set l = [] %}{% do l.append(1) %}{% do l.append([2]) %}{{ l }}", "[1, [2]]"},
		{"{% set f = '{:>5}' %}{{ f.format(1) }}", "    1"},
		{"{{ rows[0] == rows[0] }}", true},
	})
}

func TestRenderValueSharesOneBudget(t *testing.T) {
	withLimits(t, Limits{MaxAllocBytes: 8 << 20})
	// Each string alone fits the allocation budget, all of them do not.
	one := "{% for i in range(2000) %}{% endfor %}"
	if _, err := Render(one, nil); err != nil {
		t.Fatalf("one string: %v", err)
	}
	v := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		v[k] = one
	}
	_, err := RenderValue(v, nil)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("RenderValue of 6 loops: %v, want ErrLimit", err)
	}
	// Keys are rendered in order: the failing one is reported by path.
	var te *Error
	if !errors.As(err, &te) || te.Path == "" {
		t.Fatalf("no path in %v", err)
	}
}

func TestLimitDefaults(t *testing.T) {
	withLimits(t, Limits{})
	l := CurrentLimits()
	if l != DefaultLimits {
		t.Fatalf("SetLimits(zero) = %+v, want DefaultLimits %+v", l, DefaultLimits)
	}
	// A lower template limit applies to templates parsed (and cached)
	// before the change too.
	tmpl := "{{ x }}" + strings.Repeat(" ", 200)
	if err := Check(tmpl); err != nil {
		t.Fatal(err)
	}
	withLimits(t, Limits{MaxTemplateBytes: 100})
	if err := Check(tmpl); !errors.Is(err, ErrLimit) {
		t.Fatalf("Check after lowering MaxTemplateBytes: %v", err)
	}
}
