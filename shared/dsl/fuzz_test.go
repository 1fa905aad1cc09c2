package dsl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad checks that Load never panics (a recovered panic surfaces as an
// "internal error" problem, which fails here), always returns either a
// playbook or a *ValidationError with at least one problem, is
// deterministic, and that an accepted playbook re-validates cleanly and
// serialises to JSON.
//
//	go test ./shared/dsl -run '^$' -fuzz FuzzLoad -fuzztime 60s -parallel 2
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"../../emulators/e2e/testdata/conformance/noetl/*.yaml", "../../emulators/e2e/testdata/conformance/noetl-v2/playbooks/*/*.yaml", "testdata/valid/*.yaml", "testdata/invalid/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	for _, s := range []string{
		"",
		"---\n",
		"a: &a [*a]\n",
		"apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n    next: [a, {step: b, when: x}, {when: y, then: [c]}, {else: [d]}]\n",
		"apiVersion: noetl.io/v1\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    retry: {max_attempts: 2, retry_when: x, stop_when: y, on_error: {jitter: true}}\n    tool: [{a: {kind: http, url: u}}, {kind: noop}]\n",
		"workflow: [{step: start, loop: {in: [1], iterator: i, spec: {mode: parallel}}, tool: {kind: noop}, set_ctx: {a: 1}}]\nworkbook: {w: {kind: workbook, name: w}}\n",
		"workflow:\n  - <<: {step: start}\n    tool: {<<: [{kind: noop}, {kind: http}]}\n",
		"workflow: [{step: start, tool: {kind: python, code: x, timeout: .nan, args: {a: !!binary aGk=}}}]\n",
		"apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    tool: {kind: http, url: u, params: {p: 1}}\n    retry: {on_error: {max_attempts: 2}, on_success: {while: \"{{ response.more }}\", next_call: {params: {p: \"{{ page.p + 1 }}\"}, url: v}, collect: {strategy: collect, path: a.b}}}\n    next: {spec: {mode: inclusive}, arcs: [{step: start}, {step: start, when: x}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		p, err := Load(src, "fuzz.yaml")
		if err == nil {
			if p == nil {
				t.Fatal("nil playbook and nil error")
			}
			if ps := p.Validate(); len(ps) != 0 {
				t.Fatalf("accepted playbook fails Validate:\n%s", FormatProblems("fuzz.yaml", ps))
			}
			if _, err := json.Marshal(p); err != nil {
				t.Fatalf("json: %v", err)
			}
			lines := bytes.Count(src, []byte("\n")) + 2
			for _, q := range Lint(p) {
				if q.Severity != SeverityWarning && q.Severity != SeverityInfo {
					t.Fatalf("lint finding without severity: %v", q)
				}
				if q.Line < 0 || q.Line > lines {
					t.Fatalf("lint line %d outside 0..%d: %v", q.Line, lines, q)
				}
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("error %T: %v", err, err)
		}
		if len(ve.Problems) == 0 {
			t.Fatal("ValidationError without problems")
		}
		lines := bytes.Count(src, []byte("\n")) + 2
		for _, q := range ve.Problems {
			if strings.Contains(q.Message, "internal error") {
				t.Fatalf("panic recovered: %s", q.Message)
			}
			if q.Line < 0 || q.Line > lines {
				t.Fatalf("problem line %d outside 0..%d: %v", q.Line, lines, q)
			}
		}
		_, err2 := Load(src, "fuzz.yaml")
		if err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("non-deterministic:\n%v\n---\n%v", err, err2)
		}
	})
}
