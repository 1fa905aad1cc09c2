package dsl

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/template"
)

// templateSlots are the places of a playbook that hold templates; %s is
// replaced by a YAML double-quoted string.
var templateSlots = []string{
	// workload default
	"workload:\n  x: %s\nworkflow:\n  - step: start\n    tool: {kind: noop}\n",
	// arc condition
	"workflow:\n  - step: start\n    tool: {kind: noop}\n    next:\n      arcs:\n        - step: end\n          when: %s\n  - step: end\n    tool: {kind: noop}\n",
	// arc args
	"workflow:\n  - step: start\n    tool: {kind: noop}\n    next:\n      arcs:\n        - step: end\n          args: {a: %s}\n  - step: end\n    tool: {kind: noop}\n",
	// tool args and http url
	"workflow:\n  - step: start\n    tool:\n      kind: http\n      url: %[1]s\n      args: {a: %[1]s}\n",
	// set_ctx
	"workflow:\n  - step: start\n    tool: {kind: noop}\n    set_ctx: {a: %s}\n",
	// loop collection
	"workflow:\n  - step: start\n    loop: {in: %s, iterator: i}\n    tool: {kind: noop}\n",
	// python code
	"workflow:\n  - step: start\n    tool: {kind: python, code: %s}\n",
}

// FuzzLoadTemplates puts an arbitrary template text into each place of a
// playbook that holds templates, and checks that Load neither panics nor
// hangs, answers deterministically, and that template.Check — which the
// validator runs on every template — returns at once with nil or a
// *template.Error for every string of an accepted playbook (README "Security").
// Seeds: testdata/fuzz/FuzzLoadTemplates.
//
//	scripts/fuzz --target FuzzLoadTemplates --time 5m
func FuzzLoadTemplates(f *testing.F) {
	for _, s := range []string{
		"{{ workload.x }}", "{{ \uFFFD1.中 }}", "{{ [[0] * 100000] * 100000 }}", "{{ 'x'|center(300000000) }}",
		"{% for i in range(10) %}{{ i }}{% endfor %}", "{{ ctx.a | default('b') }}", "{{",
	} {
		for slot := range templateSlots {
			f.Add(s, uint8(slot))
		}
	}
	f.Fuzz(func(t *testing.T, tmpl string, slot uint8) {
		if len(tmpl) > 1<<14 {
			return
		}
		q, _ := json.Marshal(tmpl)
		src := []byte("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: fuzz}\n" +
			fmt.Sprintf(templateSlots[int(slot)%len(templateSlots)], q))
		p, err := Load(src, "fuzz.yaml")
		_, err2 := Load(src, "fuzz.yaml")
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("non-deterministic: %v / %v", err, err2)
		}
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("json: %v", err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		forEachString(v, func(s string) {
			start := time.Now()
			err := template.Check(s)
			var te *template.Error
			if err != nil && !errors.As(err, &te) {
				t.Fatalf("Check(%q): %T %v", s, err, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("Check(%q) took %s", s, d)
			}
		})
	})
}

func forEachString(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case map[string]any:
		for k, e := range x {
			fn(k)
			forEachString(e, fn)
		}
	case []any:
		for _, e := range x {
			forEachString(e, fn)
		}
	}
}
