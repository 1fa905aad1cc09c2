package template

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// fuzzLimits are the limits the fuzz target renders under: small enough
// that a runaway input is cut off quickly, so the fuzzer spends its time on
// new inputs.
var fuzzLimits = Limits{
	Timeout:          time.Second,
	MaxOutputBytes:   1 << 20,
	MaxItems:         100_000,
	MaxValueBytes:    4 << 20,
	MaxAllocBytes:    32 << 20,
	MaxTemplateBytes: 16 << 10,
	MaxNesting:       64,
	MaxRange:         100_000,
}

// fuzzScope is a scope shaped like a running playbook's.
func fuzzScope() Scope {
	return NewScope(ScopeParams{
		Workload: map[string]any{
			"users":   []any{map[string]any{"id": 1, "name": "Alice"}, map[string]any{"id": 2, "name": "Bob"}},
			"numbers": []any{1, 2, 3},
			"text":    "Hello, World",
			"nested":  map[string]any{"a": map[string]any{"b": []any{1, "x", nil, 2.5, true}}},
		},
		Ctx:         map[string]any{"page": 2, "has_more": true},
		Iterator:    "item",
		Item:        map[string]any{"k": "v"},
		LoopIndex:   new(int),
		ExecutionID: "exec-fuzz",
	})
}

// FuzzRender checks, for any template text, that Check, Render and Truthy
// return (never panic or hang), that their errors are *Error values, that
// a template Check refuses does not render, and that a render stays within
// its time budget and allocates at most a small multiple of MaxAllocBytes
// (README "Security"). Seeds: testdata/fuzz/FuzzRender (the attacks
// among them) and the ones below.
//
//	scripts/fuzz --target FuzzRender --time 5m
func FuzzRender(f *testing.F) {
	old := CurrentLimits()
	SetLimits(fuzzLimits)
	f.Cleanup(func() { SetLimits(old) })
	for _, s := range []string{
		"{{ users | map(attribute='name') | join(', ') }}",
		"{% for u in users %}{{ loop.index }}:{{ u.name | upper }}{% endfor %}",
		"{{ ctx.page + 1 if ctx.has_more else none }}",
		"{{ nested.a.b[1:] | tojson }}",
	} {
		f.Add(s)
	}
	s := fuzzScope()
	const allocBound = 512 << 20
	f.Fuzz(func(t *testing.T, tmpl string) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()

		checkErr := Check(tmpl)
		_, renderErr := Render(tmpl, s)
		_, truthyErr := Truthy(tmpl, s)

		d := time.Since(start)
		runtime.ReadMemStats(&m1)
		for name, err := range map[string]error{"Check": checkErr, "Render": renderErr, "Truthy": truthyErr} {
			var te *Error
			if err != nil && !errors.As(err, &te) {
				t.Fatalf("%s(%q): error %T is not an *Error: %v", name, tmpl, err, err)
			}
		}
		if checkErr != nil && renderErr == nil {
			t.Fatalf("Check refused %q (%v) but Render accepted it", tmpl, checkErr)
		}
		// Three renders under a 1s budget each, plus parsing.
		if d > 3*fuzzLimits.Timeout+2*time.Second {
			t.Fatalf("%q took %s", tmpl, d)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > allocBound {
			t.Fatalf("%q allocated %d MiB", tmpl, a>>20)
		}
	})
}
