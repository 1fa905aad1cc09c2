package schema

import (
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

// formsHead starts every playbook of TestFormsAgree.
const formsHead = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\n"

// TestFormsAgree holds the schema to the loader on the forms the loader
// maps (NoETL spellings and legacy forms: accepted by both) and on those it
// refuses (unknown or misplaced keys, wrong shapes: rejected by both).
func TestFormsAgree(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		ok        bool
	}{
		// Accepted: canonical, NoETL spellings, legacy forms the loader maps.
		{"canonical", `workflow:
  - step: start
    input: {n: 1}
    tool:
      - name: a
        kind: python
        code: "result = 1"
        set: {ctx.x: "{{ output.data }}", iter.y: 1, v: 2}
        spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 3, backoff: exponential, delay: 1}}, {else: {then: {do: continue}}}]}}
      - name: b
        kind: noop
    set: {ctx.done: true, step.z: 1}
    output: {store: {kind: gcs, ttl: 2h}, select: [data.count, {path: a.b, as: c}]}
    next: {spec: {mode: exclusive, on_no_match: quiet}, arcs: [{step: end, when: "{{ ctx.done }}", set: {ctx.k: 1}}]}
  - step: end
`, true},
		{"apiVersion v10, tracing and spec ignored, unknown metadata key", `tracing: {enabled: true}
spec: {x: 1}
workflow: [{step: start, tool: {kind: noop}}]
`, true},
		{"http endpoint alias and keys under tool.spec", `workflow:
  - step: start
    tool: {kind: http, endpoint: "http://x", spec: {method: GET, timeout: {connect: 5}}}
`, true},
		{"next as a step name, a list, {step}", `workflow:
  - step: start
    tool: {kind: noop}
    next: a
  - step: a
    next: [b, {step: c, when: "{{ true }}"}]
  - step: b
    next: {step: c}
  - step: c
    next: [{when: "{{ ctx.x }}", then: [d]}, {else: [end]}]
  - step: d
  - step: end
`, true},
		{"legacy retry, step result block, set_ctx, bare set target, arc cond and data", `workflow:
  - step: start
    tool: {kind: http, url: "http://x"}
    retry: {max_attempts: 3, retry_on_status: [429, 503], backoff_seconds: 2}
    result: {output_select: [status]}
    set_ctx: {a: 1}
    set: {b: 2}
    next: {arcs: [{step: end, cond: "ctx.a == 1", data: {x: 1}}]}
  - step: end
`, true},
		{"retry true and a number", `workflow:
  - step: start
    tool: [{name: a, kind: noop, retry: 2}, {name: b, kind: noop, retry: true}]
`, true},
		{"legacy loop keys", `workload: {items: [1, 2]}
workflow:
  - step: start
    loop: {collection: "{{ workload.items }}", element: it, mode: async, concurrency: 2}
    tool: {kind: noop}
`, true},
		{"loop spec and literal list", `workflow:
  - step: start
    loop: {in: [1, 2], iterator: it, spec: {mode: parallel, max_in_flight: "{{ workload.n }}", policy: {exec: local}, custom: 1}}
    tool: {kind: noop}
`, true},
		{"label map, {label: task} items, unnamed items", `workflow:
  - step: start
    tool: {a: {kind: noop}, b: {kind: noop}}
  - step: two
    tool: [{a: {kind: noop}}, {kind: noop}]
`, true},
		{"else shorthand and else: null beside then", `workflow:
  - step: start
    tool:
      kind: noop
      spec:
        policy:
          rules:
            - {when: "{{ output.status == 'ok' }}", then: {do: continue}}
            - else:
              then: {do: fail}
  - step: two
    tool: {kind: noop, spec: {policy: {rules: [{else: {do: continue}}]}}}
`, true},
		{"postgres with:, python libs list, output_select mapping, iterator dropped", `workflow:
  - step: start
    tool:
      - {name: a, kind: postgres, auth: pg, command: "select 1", with: {x: 1}, output_select: {strategy: size_threshold}}
      - {name: b, kind: python, code: "result = 1", libs: [psycopg2-binary], iterator: x}
`, true},
		{"NoETL workbook entries and a call", `workbook:
  - name: fetch
    desc: d
    tool: {kind: http, url: "http://x"}
  - {name: two, kind: noop}
workflow:
  - step: start
    tool: {kind: workbook, name: fetch, method: POST}
`, true},
		{"YAML anchors and merge keys", `workflow:
  - step: start
    tool: &t {kind: noop}
  - step: two
    tool: {<<: *t, message: hi}
`, true},
		{"cursor loop", `workflow:
  - step: start
    loop: {cursor: {kind: postgres, auth: pg, claim: "select 1"}, iterator: row, spec: {mode: cursor, frame: {max_rows: 10, lease_seconds: "{{ workload.lease }}"}}}
    tool: {kind: noop}
`, true},

		{"typed spec: case-insensitive enum, weak scalar types, templates, aliases", `workflow:
  - step: start
    tool:
      - {name: a, kind: http, url: "http://x", method: get}
      - {name: b, kind: http, endpoint: "http://x", method: "{{ workload.m }}"}
      - {name: c, kind: postgres, credential: pg, sql: "select 1", port: 5432, sslmode: Require}
      - {name: d, kind: gcs, action: delete, bucket: b, object: o}
`, true},
		{"required key under tool.spec, and left to the caller by a workbook entry", `workbook:
  - {name: call, kind: http}
workflow:
  - step: start
    tool: [{name: a, kind: http, spec: {url: "http://x"}}, {name: call, kind: workbook, url: "http://y"}]
`, true},

		// Rejected by both.
		{"enum value not available", "workflow: [{step: start, tool: {kind: http, url: u, method: FETCH}}]\n", false},
		{"required key missing", "workflow: [{step: start, tool: {kind: http, method: GET}}]\n", false},
		{"required group missing", "workflow: [{step: start, tool: {kind: postgres, auth: pg}}]\n", false},
		{"root vars", "vars: {a: 1}\nworkflow: [{step: start, tool: {kind: noop}}]\n", false},
		{"unknown root key", "workflows: []\nworkflow: [{step: start, tool: {kind: noop}}]\n", false},
		{"no metadata", "workflow: [{step: start, tool: {kind: noop}}]\n", false},
		{"empty workflow", "workflow: []\n", false},
		{"step when", "workflow: [{step: start, when: \"{{ true }}\", tool: {kind: noop}}]\n", false},
		{"task field on the step", "workflow: [{step: start, tool: {kind: python}, code: x}]\n", false},
		{"key its kind does not read", "workflow: [{step: start, tool: {kind: http, url: u, code: x}}]\n", false},
		{"unavailable kind", "workflow: [{step: start, tool: {kind: snowflake, query: x}}]\n", false},
		{"unknown kind", "workflow: [{step: start, tool: {kind: pyhton, code: x}}]\n", false},
		{"task without kind", "workflow: [{step: start, tool: {code: x}}]\n", false},
		{"tool as a kind string", "workflow: [{step: start, tool: python}]\n", false},
		{"task eval", "workflow: [{step: start, tool: {kind: noop, eval: x}}]\n", false},
		{"iter target in a step set", "workflow: [{step: start, tool: {kind: noop}, set: {iter.x: 1}}]\n", false},
		{"read-only scope target", "workflow: [{step: start, tool: {kind: noop, set: {workload.x: 1}}}]\n", false},
		{"unknown then.do", "workflow: [{step: start, tool: {kind: noop, spec: {policy: {rules: [{when: \"{{ true }}\", then: {do: retrying}}]}}}}]\n", false},
		{"do beside when", "workflow: [{step: start, tool: {kind: noop, spec: {policy: {rules: [{when: \"{{ true }}\", do: retry}]}}}}]\n", false},
		{"rule with when and else", "workflow: [{step: start, tool: {kind: noop, spec: {policy: {rules: [{when: \"{{ true }}\", else: {then: {do: fail}}}]}}}}]\n", false},
		{"policy as a list", "workflow: [{step: start, tool: {kind: noop, spec: {policy: [{when: x}]}}}]\n", false},
		{"set under spec", "workflow: [{step: start, tool: {kind: noop, spec: {set: {ctx.x: 1}}}}]\n", false},
		{"loop.in a plain string", "workflow: [{step: start, loop: {in: items, iterator: i}, tool: {kind: noop}}]\n", false},
		{"max_in_flight 0", "workflow: [{step: start, loop: {in: [1], iterator: i, spec: {max_in_flight: 0}}, tool: {kind: noop}}]\n", false},
		{"store kind s3", "workflow: [{step: start, tool: {kind: noop, output: {store: {kind: s3}}}}]\n", false},
		{"unknown arc key", "workflow: [{step: start, tool: {kind: noop}, next: {arcs: [{step: start, target: x}]}}]\n", false},
		{"next block with step", "workflow: [{step: start, tool: {kind: noop}, next: {step: start, arcs: []}}]\n", false},
		{"input and args on a step", "workflow: [{step: start, input: {a: 1}, args: {b: 1}, tool: {kind: noop}}]\n", false},
		{"script on http", "workflow: [{step: start, tool: {kind: http, url: u, script: {uri: x, source: {type: file}}}}]\n", false},
		{"unknown output key", "workflow: [{step: start, tool: {kind: noop, output: {stor: {}}}}]\n", false},
		{"step policy rules", "workflow: [{step: start, tool: {kind: noop}, spec: {policy: {rules: []}}}]\n", false},
		{"jump without to", "workflow: [{step: start, tool: {kind: noop, spec: {policy: {rules: [{else: {then: {do: jump}}}]}}}}]\n", false},
		{"to without jump", "workflow: [{step: start, tool: [{name: a, kind: noop, spec: {policy: {rules: [{else: {then: {do: continue, to: a}}}]}}}]}]\n", false},
		{"retry with attempts 0", "workflow: [{step: start, tool: {kind: noop, spec: {policy: {rules: [{else: {then: {do: retry, attempts: 0}}}]}}}}]\n", false},
		{"loop in and collection", "workflow: [{step: start, loop: {in: [1], collection: [2], iterator: i}, tool: {kind: noop}}]\n", false},
		{"loop mode and spec.mode", "workflow: [{step: start, loop: {in: [1], iterator: i, mode: parallel, spec: {mode: sequential}}, tool: {kind: noop}}]\n", false},
		{"retry_when with retry_on", "workflow: [{step: start, tool: {kind: http, url: u, retry: {retry_when: \"{{ true }}\", retry_on: [timeout]}}}]\n", false},
		{"arc args and data", "workflow: [{step: start, tool: {kind: noop}, next: {arcs: [{step: start, args: {a: 1}, data: {b: 1}}]}}]\n", false},
		{"timeout as a string", "workflow: [{step: start, tool: {kind: noop, timeout: 5s}}]\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(formsHead + c.doc)
			if c.name == "no metadata" {
				src = []byte("apiVersion: noetl.io/v2\nkind: Playbook\n" + c.doc)
			}
			if strings.HasPrefix(c.name, "apiVersion v10") {
				src = []byte(strings.Replace(formsHead, "noetl.io/v2", "noetl.io/v10", 1) + "metadata2: x\n" + c.doc)
				src = []byte(strings.Replace(string(src), "metadata: {name: t}\nmetadata2: x\n", "metadata: {name: t, owner: me}\n", 1))
			}
			_, lerr := dsl.Load(src, "t.yaml")
			serr := schemaCheck(t, src)
			if (lerr == nil) != c.ok {
				t.Fatalf("loader: got err %v, want ok=%v", lerr, c.ok)
			}
			if (serr == nil) != c.ok {
				t.Fatalf("schema: got err %v, want ok=%v", serr, c.ok)
			}
			if serr != nil {
				t.Logf("schema: %v", serr)
			}
		})
	}
}
