package dsl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/template"
)

// playbookFiles lists every playbook of both vendored conformance sets
// (the older noetl/ set and the DSL v2 set's playbooks/ and
// subscription/ playbooks), sorted.
func playbookFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{filepath.Join(confDir, "noetl"), filepath.Join(confDir, "noetl-v2")} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	if len(files) < 36 {
		t.Fatalf("only %d conformance files found under %s", len(files), confDir)
	}
	return files
}

// TestConformanceSetsValidate is `noetl validate` over every file of both
// conformance sets: each playbook is accepted except the intentionally
// broken one (rejected with a message matching tool.*required, as the
// README asks), and the Subscription resource, which is not a playbook, is
// rejected as such.
func TestConformanceSetsValidate(t *testing.T) {
	toolRequired := regexp.MustCompile(`tool.*required`)
	accepted, rejected := 0, 0
	for _, f := range playbookFiles(t) {
		base := filepath.Base(f)
		p, err := LoadFile(f)
		switch base {
		case "should_error_tool_is_required.yaml":
			rejected++
			if err == nil || !toolRequired.MatchString(err.Error()) {
				t.Errorf("%s: want a rejection matching tool.*required, got %v", f, err)
			}
			continue
		case "cloudrun_pubsub_stream.subscription.yaml":
			rejected++
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 || !strings.Contains(ve.Problems[0].Message, "kind Subscription is a subscription resource, not a playbook") {
				t.Errorf("%s: want the subscription-resource problem alone, got %v", f, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		accepted++
		if ps := p.Validate(); len(ps) > 0 {
			t.Errorf("%s: Validate after Load:\n%s", f, FormatProblems(f, ps))
		}
		if p.Entry == "" || p.Step(p.Entry) == nil {
			t.Errorf("%s: entry %q", f, p.Entry)
		}
		if _, err := json.Marshal(p); err != nil {
			t.Errorf("%s: json: %v", f, err)
		}
		for _, w := range p.Warnings {
			// The only unknown names in the fixtures: the drain's item
			// (a loop iterator the playbook never declares).
			if w.Code == LintUnknownName && base != "subscription_pubsub_drain.yaml" {
				t.Errorf("%s: %s", f, w)
			}
		}
	}
	t.Logf("conformance sets: %d playbooks accepted, %d files rejected (the broken fixture and the Subscription resource)", accepted, rejected)
	if accepted != 35 || rejected != 2 {
		t.Errorf("accepted %d, rejected %d; want 35 and 2", accepted, rejected)
	}
}

func mustLoadV2(t *testing.T, name string) *Playbook {
	t.Helper()
	return mustLoadFile(t, confV2(name))
}

func assign(scope, key string, value any) Assignment {
	return Assignment{Scope: scope, Key: key, Value: value}
}

// sameSet compares assignments without their Line/Path, and checks that
// each has a line.
func sameSet(t *testing.T, what string, got []Assignment, want ...Assignment) {
	t.Helper()
	stripped := make([]Assignment, len(got))
	for i, a := range got {
		if a.Line == 0 || a.Path == "" {
			t.Errorf("%s: assignment %s has no line/path", what, a.Target())
		}
		a.Line, a.Path = 0, ""
		stripped[i] = a
	}
	if len(want) == 0 {
		want = []Assignment{}
	}
	if !reflect.DeepEqual(stripped, want) {
		t.Errorf("%s = %+v, want %+v", what, stripped, want)
	}
}

func TestV2ArcSetAndInput(t *testing.T) {
	p := mustLoadV2(t, "test_args_passing.yaml")
	arc := p.Step("start").Next.Arcs[0]
	sameSet(t, "arc set", arc.Set, assign(ScopeCtx, "test_var", "{{ initial_value }}"), assign(ScopeCtx, "computed", 200))
	if arc.Args != nil {
		t.Errorf("arc args = %v", arc.Args)
	}
	if arc.Set[0].Path != "workflow[0].next.arcs[0].set.ctx.test_var" || arc.Set[0].Line != 23 {
		t.Errorf("set path/line = %s %d", arc.Set[0].Path, arc.Set[0].Line)
	}
	compute := p.Step("use_vars").Tasks[0]
	if !reflect.DeepEqual(compute.Input, map[string]any{"test_var": "{{ ctx.test_var }}", "computed": "{{ ctx.computed }}"}) {
		t.Errorf("input = %v", compute.Input)
	}
	if _, ok := compute.Config["input"]; ok {
		t.Error("input must not stay in config")
	}
}

func TestV2StepSetAndPolicySet(t *testing.T) {
	p := mustLoadV2(t, "patient_batch_parallel_queue/patient_batch_parallel_queue.yaml")
	sameSet(t, "start set", p.Step("start").Set, assign(ScopeCtx, "producer_cursor", 0))
	sameSet(t, "enqueue set", p.Step("enqueue_next_batch").Set,
		assign(ScopeCtx, "producer_cursor", "{{ output.data.rows[0].new_cursor | int }}"),
		assign(ScopeCtx, "last_discovered_count", "{{ output.data.rows[0].discovered_count | int }}"),
		assign(ScopeCtx, "last_enqueued_count", "{{ output.data.rows[0].enqueued_count | int }}"))
	claim := p.Step("process_patient_batch").Tasks[0]
	if r := claim.Policy.Rules[0]; r.Then.Do != "break" || len(r.Then.Set) != 0 {
		t.Errorf("claim rule 0 = %+v", r)
	}
	sameSet(t, "claim else set", claim.Policy.Rules[1].Then.Set,
		assign(ScopeIter, "patient_id", "{{ output.data.rows[0].patient_id }}"),
		assign(ScopeIter, "attempt_count", "{{ output.data.rows[0].attempt_count }}"))
	fetch := p.Step("process_patient_batch").Tasks[1]
	if th := fetch.Policy.Rules[0].Then; th.Do != "retry" || th.Backoff != "none" || th.Delay != 1 || th.Attempts != 3 {
		t.Errorf("backoff fixed → %+v", th)
	}

	p = mustLoadV2(t, "vars_test/test_vars_simple.yaml")
	sameSet(t, "set_vars else", p.Step("set_var").Tasks[0].Policy.Rules[0].Then.Set,
		assign(ScopeCtx, "test_counter", "{{ output.data.test_counter }}"),
		assign(ScopeCtx, "set_message", "{{ output.data.message }}"))
	if libs := p.Step("set_var").Tasks[0].Config["libs"]; !reflect.DeepEqual(libs, map[string]any{"os": "os", "logging": "logging"}) {
		t.Errorf("libs = %v", libs)
	}
}

func TestV2JumpSetAndLoop(t *testing.T) {
	p := mustLoadV2(t, "pagination/fetch_load_test/test_fetch_load.yaml")
	s := p.Step("fetch_all_patients")
	if s.Loop.Mode != "parallel" || s.Loop.MaxInFlight != 5 || s.Loop.MaxInFlightTemplate != "" || s.Loop.Iterator != "item" {
		t.Errorf("loop = %+v", s.Loop)
	}
	sameSet(t, "init_page", s.Tasks[0].Policy.Rules[0].Then.Set,
		assign(ScopeIter, "page", 1), assign(ScopeIter, "pages_fetched", 0), assign(ScopeIter, "records_fetched", 0))
	jump := s.Tasks[2].Policy.Rules[0].Then
	if jump.Do != "jump" || jump.To != "fetch_page" {
		t.Errorf("jump = %+v", jump)
	}
	sameSet(t, "jump set", jump.Set, assign(ScopeIter, "page", "{{ (iter.page | int) + 1 }}"))
	gen := p.Step("generate_patients")
	if gen.Output == nil || !reflect.DeepEqual(gen.Output.Select, []OutputSelect{{Path: "patients", As: "patients"}, {Path: "count", As: "count"}}) {
		t.Errorf("generate_patients output = %+v", gen.Output)
	}
	vr := p.Step("validate_results").Tasks[0]
	if o := vr.Output; o == nil || o.Store == nil || o.Store.Kind != "kv" || o.Store.Tier != TierGCS || o.InlineMaxBytes == nil || *o.InlineMaxBytes != 0 {
		t.Errorf("validate_results output = %+v", vr.Output)
	}
}

func TestV2ToolItemSet(t *testing.T) {
	p := mustLoadV2(t, "pagination/retry/test_pagination_retry.yaml")
	fetch := p.Step("fetch_with_retry").Tasks[0]
	sameSet(t, "fetch set", fetch.Set, assign(ScopeVar, "fetch_result", "{{ output }}"))
	if fetch.Set[0].Target() != "fetch_result" {
		t.Errorf("target = %q", fetch.Set[0].Target())
	}
	if got := p.Step("fetch_with_retry").Tasks[1].Input["http_response"]; got != "{{ fetch_result }}" {
		t.Errorf("collect input = %v", got)
	}
	sameSet(t, "step set", p.Step("fetch_with_retry").Set,
		assign(ScopeCtx, "collected_data", "{{ fetch_with_retry.collected_data }}"),
		assign(ScopeCtx, "current_page", "{{ (ctx.current_page | int) + 1 }}"))
	for _, w := range p.Warnings {
		if w.Code == LintUnknownName {
			t.Errorf("bare set target must define the name: %s", w)
		}
	}
}

func TestV2KeysUnderToolSpec(t *testing.T) {
	p := mustLoadV2(t, "examples/simple_http.yaml")
	start := p.Step("start").Tasks[0]
	want := map[string]any{"method": "GET", "url": "{{ api_url }}/get", "params": map[string]any{"test": "hello"}}
	if !reflect.DeepEqual(start.Config, want) || start.Spec != nil || len(start.Policy.Rules) != 3 {
		t.Errorf("start task = %+v", start)
	}
	if r := start.Policy.Rules[2]; !r.Else || r.Then.Do != "continue" {
		t.Errorf("else shorthand = %+v", r)
	}
	warned(t, p, 37, "else without then (do directly under else): read as {else: {then: {do: ...}}}; write the then")
	proc := p.Step("process").Tasks[0]
	if proc.Input["data"] != "{{ ctx.response_data }}" || proc.Config["code"] == nil || proc.Spec != nil {
		t.Errorf("process task = %+v", proc)
	}
	sameSet(t, "arc set", p.Step("start").Next.Arcs[0].Set, assign(ScopeCtx, "response_data", "{{ start.data }}"))
	if ex := p.Metadata.Extra["labels"]; !reflect.DeepEqual(ex, map[string]any{"category": "example", "version": "v10"}) {
		t.Errorf("metadata labels = %v", ex)
	}
}

func TestV2WorkbookEntries(t *testing.T) {
	p := mustLoadV2(t, "control_flow_workbook/control_flow_workbook.yaml")
	wb := p.Workbook["compute_flag"]
	if wb == nil || wb.Kind != "python" || wb.Name != "compute_flag" || wb.Path != "workbook[0].tool" || wb.Line != 15 {
		t.Fatalf("workbook entry = %+v", wb)
	}
	if !reflect.DeepEqual(wb.Input, map[string]any{"temperature_c": nil}) || !reflect.DeepEqual(wb.Assert["returns"], []any{"is_hot", "message"}) {
		t.Errorf("entry input/assert = %v %v", wb.Input, wb.Assert)
	}
	call := p.Step("eval_flag").Tasks[0]
	if call.Kind != "workbook" || call.Workbook != "compute_flag" || call.Input["temperature_c"] != "{{ temperature_c }}" {
		t.Errorf("workbook call = %+v", call)
	}
	p = mustLoadV2(t, "playbook_composition/user_profile_scorer.yaml")
	if len(p.Workbook) != 5 || p.Workbook["calculate_age_factor"].Assert == nil {
		t.Errorf("scorer workbook = %v", sortedKeys(p.Workbook))
	}

	ve := loadErr(t, hdr+"  - step: start\n    tool: {kind: noop}\nworkbook:\n  - name: a\n    desc: doc\n    tool: {kind: noop}\n    sink: x\n  - name: b\n    tool: [{kind: noop}]\n  - name: c\n    tool: {kind: noop}\n    assert: {x: 1}\n    extra: 1\n")
	find(t, ve.Problems, 12, "workbook[0].sink", "workbook sink is not canonical")
	find(t, ve.Problems, 14, "workbook[1].tool", "a workbook entry's tool must be one task mapping")
	find(t, ve.Problems, 18, "workbook[2].extra", `unknown workbook entry key "extra"`)
	if len(ve.Problems) != 3 {
		t.Errorf("problems:\n%s", FormatProblems("test.yaml", ve.Problems))
	}
}

func TestV2CursorLoop(t *testing.T) {
	p := mustLoadV2(t, "pft_flow_test/test_pft_page_continuation.yaml")
	lp := p.Step("fetch_pages").Loop
	if lp.Mode != "cursor" || lp.In != nil || lp.Iterator != "page" || lp.MaxInFlight != 1 {
		t.Errorf("loop = %+v", lp)
	}
	c := lp.Cursor
	if c == nil || c.Kind != "postgres" || c.Auth != "pg_k8s" || !strings.Contains(c.Claim, "LIMIT {{ __frame_max_rows | default(1) | int }}") || c.Line != 106 || c.Path != "workflow[1].loop.cursor" {
		t.Fatalf("cursor = %+v", c)
	}
	want := Frame{MaxRows: 50, MaxSeconds: 30, MaxBytes: 67108864, LeaseSeconds: 120, HeartbeatSeconds: 30, RowConcurrency: 1, Process: "row", RetryMode: "whole_frame", MaxAttempts: 3}
	if lp.Frame == nil || !reflect.DeepEqual(*lp.Frame, want) {
		t.Errorf("frame = %+v", lp.Frame)
	}
	// A cursor loop without frame gets NoETL's defaults.
	p = mustLoad(t, hdr+"  - step: start\n    loop:\n      cursor: {auth: pg, claim: \"SELECT 1 LIMIT {{ __frame_max_rows }}\"}\n      iterator: row\n      spec: {mode: cursor, max_in_flight: 2}\n    tool: {kind: noop}\n")
	if f := p.Step("start").Loop.Frame; f == nil || !reflect.DeepEqual(f, defaultFrame()) || f.MaxRows != 1 {
		t.Errorf("default frame = %+v", f)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %v", p.Warnings)
	}
	// Frame fields may be templates (NoETL's frame_heartbeat_regression
	// fixture); unknown loop policy keys are ignored with a warning.
	p = mustLoad(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkload: {lease: 60}\nworkflow:\n  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: row\n      spec: {mode: cursor, policy: {exec: distributed, results: {preserve_order: true}}, frame: {lease_seconds: \"{{ lease }}\", max_rows: 5}}\n    tool: {kind: noop}\n")
	f := p.Step("start").Loop.Frame
	if f.LeaseSeconds != 120 || f.MaxRows != 5 || !reflect.DeepEqual(f.Templates, map[string]string{"lease_seconds": "{{ lease }}"}) || p.Step("start").Loop.Exec != "distributed" {
		t.Errorf("templated frame = %+v", f)
	}
	warned(t, p, 10, "loop.spec.policy.results is not part of NoETL's loop policy (it has exec only): ignored")
}

func TestCursorLoopErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"cursor without mode cursor", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: r\n    tool: {kind: noop}\n", 8, "workflow[0].loop.cursor", "loop.cursor needs spec.mode: cursor (got sequential)"},
		{"mode cursor without cursor", "  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.mode", "needs a loop.cursor source"},
		{"in and cursor", "  - step: start\n    loop:\n      in: [1]\n      cursor: {auth: pg, claim: x}\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 9, "workflow[0].loop.cursor", "either in (a collection) or cursor (pull), not both"},
		{"cursor kind needs a service", "  - step: start\n    loop:\n      cursor: {kind: mysql, auth: m, claim: x}\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 8, "workflow[0].loop.cursor.kind", `cursor kind "mysql" needs a MySQL server`},
		{"cursor without claim", "  - step: start\n    loop:\n      cursor: {auth: pg}\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 8, "workflow[0].loop.cursor.claim", "loop.cursor needs claim"},
		{"cursor without auth", "  - step: start\n    loop:\n      cursor: {claim: x}\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 8, "workflow[0].loop.cursor.auth", "loop.cursor needs auth"},
		{"cursor unknown key", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x, table: t}\n      iterator: r\n      spec: {mode: cursor}\n    tool: {kind: noop}\n", 8, "workflow[0].loop.cursor.table", `unknown loop.cursor key "table"`},
		{"frame process", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: r\n      spec: {mode: cursor, frame: {process: batch}}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.frame.process", "frame.process must be row or frame"},
		{"frame max_rows", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: r\n      spec: {mode: cursor, frame: {max_rows: 0}}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.frame.max_rows", "frame.max_rows must be ≥ 1"},
		{"frame unknown", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: r\n      spec: {mode: cursor, frame: {rows: 1}}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.frame.rows", `unknown frame key "rows"`},
		{"policy exec", "  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {policy: {exec: remote}}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.policy.exec", "must be distributed or local"},
		{"max_in_flight text", "  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {mode: parallel, max_in_flight: lots}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.max_in_flight", "an integer ≥ 1 or a template"},
		{"max_in_flight zero", "  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {mode: parallel, max_in_flight: \"0\"}\n    tool: {kind: noop}\n", 10, "workflow[0].loop.spec.max_in_flight", "at least 1"},
		{"ctx set in a cursor loop", "  - step: start\n    loop:\n      cursor: {auth: pg, claim: x}\n      iterator: r\n      spec: {mode: cursor}\n    tool:\n      kind: noop\n      set: {ctx.last: \"{{ iter.r }}\"}\n", 13, "workflow[0].tool.set.ctx.last", "from cursor iterations race"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, hdr+c.src).Problems, c.line, c.path, c.msg)
		})
	}
}

func TestLoopMaxInFlightTemplate(t *testing.T) {
	for _, c := range []struct {
		val  string
		n    int
		tmpl string
	}{
		{"8", 8, ""},
		{`"8"`, 8, ""},
		{"4.0", 4, ""},
		{`"{{ workload.max_in_flight }}"`, 0, "{{ workload.max_in_flight }}"},
	} {
		p := mustLoad(t, hdr+"  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {mode: parallel, max_in_flight: "+c.val+"}\n    tool: {kind: noop}\n")
		if lp := p.Step("start").Loop; lp.MaxInFlight != c.n || lp.MaxInFlightTemplate != c.tmpl {
			t.Errorf("max_in_flight %s → %d %q", c.val, lp.MaxInFlight, lp.MaxInFlightTemplate)
		}
	}
	ve := loadErr(t, hdr+"  - step: start\n    loop:\n      in: [1]\n      iterator: r\n      spec: {mode: parallel, max_in_flight: \"{{ workload.n \"}\n    tool: {kind: noop}\n")
	find(t, ve.Problems, 10, "workflow[0].loop.spec.max_in_flight", "template does not parse")
}

func TestV2OutputSelectAndArtifact(t *testing.T) {
	p := mustLoadV2(t, "test_output_select.yaml")
	o := p.Step("start").Output
	if o == nil || o.Store == nil || o.Store.Kind != "auto" || o.Store.Tier != TierAuto || o.InlineMaxBytes != nil || len(o.Select) != 3 || o.Select[2] != (OutputSelect{Path: "total_size", As: "total_size"}) || o.Line != 36 || o.Path != "workflow[0].output" {
		t.Errorf("step output = %+v", o)
	}
	art := p.Step("lazy_load_full_data").Tasks[0]
	if art.Kind != "artifact" || art.Config["action"] != "get" || art.Input["result_ref"] != "{{ start._ref }}" {
		t.Errorf("artifact = %+v", art)
	}
}

func TestOutputBlocks(t *testing.T) {
	mk := func(out string) string {
		return hdr + "  - step: start\n    tool:\n      kind: noop\n      output: " + out + "\n"
	}
	for kind, tier := range map[string]string{"auto": TierAuto, "memory": TierInline, "eventlog": TierInline, "kv": TierGCS, "disk": TierGCS, "object": TierGCS, "gcs": TierGCS} {
		p := mustLoad(t, mk("{store: {kind: "+kind+", bucket: b, prefix: p/, ttl: 2h, compression: gzip, credential: c}}"))
		st := p.Step("start").Tasks[0].Output.Store
		if st.Tier != tier || st.Bucket != "b" || st.Prefix != "p/" || st.TTL != "2h" || st.Compression != "zstd" || st.Credential != "c" {
			t.Errorf("store %s = %+v", kind, st)
		}
	}
	p := mustLoad(t, mk("{select: [\"$.data.items[0].name\", {path: data.count, as: n}], output_select: [status], accumulate: {enabled: true, strategy: concat, merge_path: data.items, manifest_as: all, max_items: 10}, preview_max_bytes: 10, scope: step, as: res, store: {inline_max_bytes: 100}}"))
	o := p.Step("start").Tasks[0].Output
	wantSel := []OutputSelect{{Path: "data.items[0].name", As: "name"}, {Path: "data.count", As: "n"}, {Path: "status", As: "status"}}
	if !reflect.DeepEqual(o.Select, wantSel) || *o.InlineMaxBytes != 100 || *o.PreviewMaxBytes != 10 || o.Scope != "step" || o.As != "res" {
		t.Errorf("output = %+v", o)
	}
	if a := o.Accumulate; *a != (OutputAccumulate{Enabled: true, Strategy: "concat", MergePath: "data.items", ManifestAs: "all", OnSuccess: true, MaxItems: 10}) {
		t.Errorf("accumulate = %+v", a)
	}
	// The tool-level output_select (noetl-server ToolSpec) joins output.
	p = mustLoad(t, hdr+"  - step: start\n    tool:\n      kind: noop\n      output_select: [a.b]\n      output: {store: {kind: gcs}}\n")
	if o := p.Step("start").Tasks[0].Output; o.Store.Tier != TierGCS || !reflect.DeepEqual(o.Select, []OutputSelect{{Path: "a.b", As: "b"}}) {
		t.Errorf("output_select = %+v", o)
	}

	cases := []struct {
		name, out string
		line      int
		path, msg string
	}{
		{"s3", "{store: {kind: s3}}", 9, "workflow[0].tool.output.store.kind", `output.store kind "s3" needs an AWS S3 bucket`},
		{"db", "{store: {kind: db}}", 9, "workflow[0].tool.output.store.kind", `output.store kind "db" needs NoETL's PostgreSQL result_store table`},
		{"duckdb", "{store: {kind: duckdb}}", 9, "workflow[0].tool.output.store.kind", `output.store kind "duckdb" needs a DuckDB result database`},
		{"unknown store", "{store: {kind: tape}}", 9, "workflow[0].tool.output.store.kind", `unknown output.store kind "tape" (kinds here: auto → auto, disk → gcs, eventlog → inline, gcs → gcs, kv → gcs, memory → inline, object → gcs)`},
		{"compression", "{store: {compression: zip}}", 9, "workflow[0].tool.output.store.compression", "none, lz4 or zstd"},
		{"ttl", "{store: {ttl: soon}}", 9, "workflow[0].tool.output.store.ttl", "not a duration"},
		{"store key", "{store: {size: 1}}", 9, "workflow[0].tool.output.store.size", `unknown output.store key "size"`},
		{"select path", "{select: [\"a..b\"]}", 9, "workflow[0].tool.output.select[0]", "must be a dotted field path"},
		{"select twice", "{select: [a.x, b.x]}", 9, "workflow[0].tool.output.select[1]", `output select name "x" is used twice`},
		{"strategy", "{accumulate: {strategy: sum}}", 9, "workflow[0].tool.output.accumulate.strategy", "append, replace, merge or concat"},
		{"inline twice", "{inline_max_bytes: 1, store: {inline_max_bytes: 2}}", 9, "workflow[0].tool.output.store.inline_max_bytes", "given twice"},
		{"negative", "{inline_max_bytes: -1}", 9, "workflow[0].tool.output.inline_max_bytes", "must be ≥ 0"},
		{"scope", "{scope: forever}", 9, "workflow[0].tool.output.scope", "step, execution, workflow or permanent"},
		{"output key", "{where: x}", 9, "workflow[0].tool.output.where", `unknown output key "where"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, mk(c.out)).Problems, c.line, c.path, c.msg)
		})
	}
	// Step-level output is checked the same way.
	ve := loadErr(t, hdr+"  - step: start\n    tool: {kind: noop}\n    output: {store: {kind: s3}}\n")
	find(t, ve.Problems, 8, "workflow[0].output.store.kind", "needs an AWS S3 bucket")
}

func TestV2Joins(t *testing.T) {
	p := mustLoadV2(t, "fanout_reduce/fanout_reduce_phase6.yaml")
	if got := p.Step("reduce_customer").JoinOf; !reflect.DeepEqual(got, []string{"normalize_customer", "enrich_customer"}) {
		t.Errorf("reduce_customer.JoinOf = %v", got)
	}
	for _, s := range []string{"start", "normalize_customer", "enrich_customer"} {
		if j := p.Step(s).JoinOf; j != nil {
			t.Errorf("%s.JoinOf = %v", s, j)
		}
	}
	noFinding(t, Lint(p), LintFanIn)

	// end joins the inclusive fan-out of hot_path; cold_task is counted
	// too (the planner counts every arc; JoinOf's doc says how the engine
	// sees that the cold branch cannot arrive).
	p = mustLoadV2(t, "control_flow_workbook/control_flow_workbook.yaml")
	if got := p.Step("end").JoinOf; !reflect.DeepEqual(got, []string{"hot_task_a", "hot_task_b", "cold_task"}) {
		t.Errorf("end.JoinOf = %v", got)
	}
	noFinding(t, Lint(p), LintFanIn)

	// Loops with exclusive routing have no joins (back-edges do not count).
	for _, f := range []string{"patient_batch_parallel_queue/patient_batch_parallel_queue.yaml", "pagination/cursor/test_pagination_cursor.yaml", "pagination/fetch_load_test/test_fetch_load.yaml"} {
		for _, s := range mustLoadV2(t, f).Workflow {
			if s.JoinOf != nil {
				t.Errorf("%s: %s.JoinOf = %v", f, s.Name, s.JoinOf)
			}
		}
	}

	// An upstream the entry never reaches is not waited for; a fan-out
	// target that is itself reached twice is the join.
	p = mustLoad(t, hdr+`  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: a}, {step: b}]
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}
  - step: stray
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
`)
	if got := p.Step("b").JoinOf; !reflect.DeepEqual(got, []string{"start", "a"}) {
		t.Errorf("b.JoinOf = %v", got)
	}
}

func TestImplicitEndRouting(t *testing.T) {
	p := mustLoadV2(t, "root_scripts/test_implicit_end_routing.yaml")
	step1 := p.Step("step1")
	if step1.Next == nil || len(step1.Next.Arcs) != 1 {
		t.Fatalf("step1.Next = %+v", step1.Next)
	}
	a := step1.Next.Arcs[0]
	if !a.Implicit || a.Step != "end" || a.When != "" || a.On != "" || a.Line != 21 || a.Path != "workflow[1]" || step1.Next.Mode != "exclusive" {
		t.Errorf("implicit arc = %+v", a)
	}
	if p.Step("end").Next != nil {
		t.Error("end must stay a leaf")
	}
	if a := p.Step("start").Next.Arcs[0]; a.Implicit {
		t.Error("explicit arc marked implicit")
	}
	noFinding(t, Lint(p), LintUnreachable, LintNoTerminal)
	if ps := p.Validate(); len(ps) > 0 {
		t.Errorf("Validate: %v", ps)
	}
	// Without a step named end, a leaf stays a leaf; the final step gets
	// no implicit arc either.
	p = mustLoadV2(t, "fanout_reduce/fanout_reduce_phase6.yaml")
	if p.Step("reduce_customer").Next != nil {
		t.Error("no end step: no implicit arc")
	}
	p = mustLoad(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nexecutor: {spec: {final_step: report}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n  - step: report\n    tool: {kind: noop}\n  - step: end\n    tool: {kind: noop}\n")
	if p.Step("report").Next != nil || p.Step("start").Next == nil || p.FinalStep != "report" {
		t.Errorf("final step routing: report=%+v start=%+v", p.Step("report").Next, p.Step("start").Next)
	}
	noFinding(t, Lint(p), LintUnreachable)
}

func TestEntryAndTermination(t *testing.T) {
	const exhdr = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\n"
	p := mustLoad(t, exhdr+"workflow:\n  - step: first\n    tool: {kind: noop}\n    next: {arcs: [{step: second}]}\n  - step: second\n    tool: {kind: noop}\n")
	if p.Entry != "first" || p.EntryStep() != "first" {
		t.Errorf("entry = %q (first step when there is no start)", p.Entry)
	}
	p = mustLoad(t, exhdr+"workflow:\n  - step: first\n    tool: {kind: noop}\n  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: first}]}\n")
	if p.Entry != "start" {
		t.Errorf("entry = %q (start wins over the first step)", p.Entry)
	}
	p = mustLoad(t, exhdr+"executor:\n  profile: distributed\n  spec: {entry_step: b, final_step: fin, no_next_is_error: true, policy: {results: {}}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n  - step: b\n    tool: {kind: noop}\n    next:\n      spec: {mode: exclusive, on_no_match: quiet}\n      arcs: [{step: start, when: \"{{ ctx.again }}\"}]\n  - step: fin\n    tool: {kind: noop}\n")
	if p.Entry != "b" || p.FinalStep != "fin" || !p.NoNextIsError || p.Step("b").Next.OnNoMatch != "quiet" {
		t.Errorf("executor spec = %q %q %v %q", p.Entry, p.FinalStep, p.NoNextIsError, p.Step("b").Next.OnNoMatch)
	}
	if p.Step("start").Next != nil || p.Executor["profile"] != "distributed" {
		t.Error("no end step: no implicit arcs; executor kept verbatim")
	}
	if on := mustLoad(t, hdr+"  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: start, when: \"{{ ctx.x }}\"}]}\n").Step("start").Next.OnNoMatch; on != "complete" {
		t.Errorf("default on_no_match = %q", on)
	}

	cases := []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"unknown entry", "executor: {spec: {entry_step: strat}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", 4, "executor.spec.entry_step", `entry step "strat" does not exist (did you mean "start"?)`},
		{"unknown final", "executor: {spec: {final_step: fin}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", 4, "executor.spec.final_step", `final step "fin" does not exist`},
		{"final is entry", "executor: {spec: {final_step: start}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", 4, "executor.spec.final_step", "is also the entry step"},
		{"arc to final", "executor: {spec: {final_step: fin}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: fin}]}\n  - step: fin\n    tool: {kind: noop}\n", 8, "workflow[0].next.arcs[0].step", `arc to the final step "fin"`},
		{"no_next_is_error type", "executor: {spec: {no_next_is_error: sometimes}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", 4, "executor.spec.no_next_is_error", "must be true or false"},
		{"profile", "executor: {profile: cloud}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", 4, "executor.profile", "local, distributed or auto"},
		{"on_no_match", "workflow:\n  - step: start\n    tool: {kind: noop}\n    next: {spec: {on_no_match: fail}, arcs: [{step: start}]}\n", 7, "workflow[0].next.spec.on_no_match", "must be complete or quiet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, exhdr+c.src).Problems, c.line, c.path, c.msg)
		})
	}
	// Validate on a Go-built playbook checks the same fields.
	gp := &Playbook{APIVersion: APIVersion, Kind: "Playbook", Metadata: Metadata{Name: "g"}, Entry: "nope", FinalStep: "zz",
		Workflow: []*Step{{Name: "start", Tasks: []*Task{{Name: "t", Kind: "noop"}}}}}
	got := FormatProblems("g", gp.Validate())
	for _, w := range []string{`entry step "nope" does not exist`, `final step "zz" does not exist`} {
		if !strings.Contains(got, w) {
			t.Errorf("Validate lacks %q:\n%s", w, got)
		}
	}
}

func TestSetTargets(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - name: a
        kind: noop
        set: {tmp: "{{ output.data }}", step.seen: true, iter.i: 1, ctx.deep.x: 2}
        spec:
          policy:
            rules:
              - else:
                  then: {do: continue, set: {marker: 1, ctx.m: 2}, set_iter: {k: 3}}
      - name: b
        kind: noop
        result: "{{ tmp }} {{ marker }}"
    set: {bare: 1, step.s: 2}
    set_ctx: {legacy: 3}
    next:
      arcs: [{step: start, when: "{{ ctx.again }}", set: {ctx.again: false, step.n: 1}}]
`)
	s := p.Step("start")
	sameSet(t, "tool set", s.Tasks[0].Set, assign(ScopeVar, "tmp", "{{ output.data }}"), assign(ScopeStep, "seen", true), assign(ScopeIter, "i", 1), assign(ScopeCtx, "deep.x", 2))
	sameSet(t, "then set", s.Tasks[0].Policy.Rules[0].Then.Set, assign(ScopeVar, "marker", 1), assign(ScopeCtx, "m", 2), assign(ScopeIter, "k", 3))
	sameSet(t, "step set", s.Set, assign(ScopeCtx, "bare", 1), assign(ScopeStep, "s", 2), assign(ScopeCtx, "legacy", 3))
	sameSet(t, "arc set", s.Next.Arcs[0].Set, assign(ScopeCtx, "again", false), assign(ScopeStep, "n", 1))
	warned(t, p, 19, `step set target "bare" has no scope: written to ctx (write ctx.bare)`)
	for _, w := range p.Warnings {
		if w.Code == LintUnknownName {
			t.Errorf("bare targets define names: %s", w)
		}
	}
	if got := SetOf(s.Set, ScopeCtx); !reflect.DeepEqual(got, map[string]any{"bare": 1, "legacy": 3}) || SetOf(s.Set, ScopeIter) != nil {
		t.Errorf("SetOf = %v", got)
	}

	cases := []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"iter at step level", "  - step: start\n    tool: {kind: noop}\n    set: {iter.x: 1}\n", 8, "workflow[0].set.iter.x", "the iter scope exists only while a loop iteration runs"},
		{"iter on an arc", "  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: start, set: {iter.n: 1}}]}\n", 8, "workflow[0].next.arcs[0].set.iter.n", "the iter scope exists only while a loop iteration runs"},
		{"read-only scope", "  - step: start\n    tool: {kind: noop}\n    set: {workload.x: 1}\n", 8, "workflow[0].set.workload.x", "writes the read-only scope workload"},
		{"unknown scope at step level", "  - step: start\n    tool: {kind: noop}\n    set: {vars.x: 1}\n", 8, "workflow[0].set.vars.x", `unknown scope "vars"`},
		{"unknown scope in a tool", "  - step: start\n    tool: {kind: noop, set: {vars.x: 1}}\n", 7, "workflow[0].tool.set.vars.x", `unknown scope "vars"`},
		{"bad name", "  - step: start\n    tool: {kind: noop}\n    set: {ctx.1x: 1}\n", 8, "workflow[0].set.ctx.1x", "one or more identifiers"},
		{"empty name", "  - step: start\n    tool: {kind: noop}\n    set: {ctx.: 1}\n", 8, "workflow[0].set.ctx.", "one or more identifiers"},
		{"twice", "  - step: start\n    tool: {kind: noop}\n    set: {ctx.x: 1}\n    set_ctx: {x: 2}\n", 9, "workflow[0].set_ctx.x", "target ctx.x is written twice in the same block (first at line 8)"},
		{"not a mapping", "  - step: start\n    tool: {kind: noop}\n    set: [ctx.x]\n", 8, "workflow[0].set", "must be a mapping of targets"},
		{"set under spec", "  - step: start\n    tool: {kind: noop, spec: {set: {ctx.x: 1}}}\n", 7, "workflow[0].tool.spec.set", "must not live under spec"},
		{"ctx in a parallel loop", "  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel}}\n    tool: {kind: noop}\n    set: {ctx.x: 1}\n", 9, "workflow[0].set.ctx.x", "from parallel iterations race"},
		{"ctx in a parallel tool set", "  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel}}\n    tool: {kind: noop, set: {ctx.x: 1}}\n", 8, "workflow[0].tool.set.ctx.x", "allow_set_ctx"},
		{"admit set", "  - step: start\n    spec: {policy: {admit: {rules: [{else: {then: {allow: true, set: {ctx.x: 1}}}}]}}}\n    tool: {kind: noop}\n", 7, "workflow[0].spec.policy.admit.rules[0].else.then.set", "admit rules only decide allow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, hdr+c.src).Problems, c.line, c.path, c.msg)
		})
	}
	// iter and step targets are fine in parallel loops; ctx with the opt-in.
	mustLoad(t, hdr+"  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel}}\n    tool: {kind: noop, set: {iter.x: 1, step.y: 2}}\n")
	mustLoad(t, hdr+"  - step: start\n    loop: {in: [1], iterator: x, spec: {mode: parallel, allow_set_ctx: true}}\n    tool: {kind: noop}\n    set: {ctx.x: 1}\n")
}

func TestInputSpellings(t *testing.T) {
	p := mustLoad(t, hdr+"  - step: start\n    input: {a: 1}\n    tool: {kind: python, spec: {input: {b: 2}}, code: x}\n  - step: two\n    args: {c: 3}\n    tool: {kind: noop, args: {d: 4}}\n")
	if s := p.Step("start"); s.Input["a"] != 1 || s.Tasks[0].Input["b"] != 2 || s.Tasks[0].Spec != nil {
		t.Errorf("start = %+v %+v", s.Input, s.Tasks[0])
	}
	if s := p.Step("two"); s.Input["c"] != 3 || s.Tasks[0].Input["d"] != 4 {
		t.Errorf("two = %+v %+v", s.Input, s.Tasks[0].Input)
	}
	for _, c := range []struct {
		src       string
		line      int
		path, msg string
	}{
		{"  - step: start\n    input: {a: 1}\n    args: {a: 1}\n    tool: {kind: noop}\n", 8, "workflow[0].args", "step has both input and args"},
		{"  - step: start\n    tool: {kind: noop, args: {a: 1}, input: {a: 1}}\n", 7, "workflow[0].tool.input", "task has both args and input"},
		{"  - step: start\n    tool:\n      kind: noop\n      spec: {input: {a: 1}}\n      input: {a: 2}\n", 10, "workflow[0].tool.input", "input is given both here and as spec.input"},
		{"  - step: start\n    tool:\n      kind: http\n      url: a\n      spec: {url: b}\n", 9, "workflow[0].tool.url", "url is given both here and as spec.url"},
	} {
		find(t, loadErr(t, hdr+c.src).Problems, c.line, c.path, c.msg)
	}
}

func TestKindsAndKeys(t *testing.T) {
	// Every kind of the table loads with its keys (those here are taken
	// from the NoETL fixtures and the tools' configs).
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - {name: d, kind: duckdb, database: ":memory:", query: "SELECT 1"}
      - {name: tr, kind: transfer, source: {type: http, url: "http://x"}, target: {type: postgres, auth: pg, table: t, mapping: {a: b}}, chunk_size: 100, mode: append}
      - {name: g, kind: gcs, action: download, source: "gs://b/o", destination: /tmp/o}
      - {name: s, kind: secrets, provider: env, key: API_TOKEN}
      - {name: n, kind: nats, auth: nc, operation: kv_put, bucket: b, key: k, value: {a: 1}}
      - {name: sh, kind: shell, command: "echo hi", timeout_seconds: 5}
      - {name: sub, kind: subscription, source: pubsub, operation: poll, subscription: "projects/p/subscriptions/s", batch: 5, ack: on_success}
      - {name: art, kind: artifact, action: get, input: {result_ref: "{{ start._ref }}"}}
      - {name: rf, kind: result_fetch, ref: "noetl://execution/1/result/x/1"}
      - {name: h, kind: http, endpoint: "http://x", method: POST, json: {a: 1}}
      - {name: py, kind: python, script: {uri: /tmp/a.py, source: {type: file}}}
      - {name: pg, kind: postgres, auth: pg, script: {uri: "gs://b/q.sql", source: {type: gcs}}}
      - {name: pb, kind: playbook, path: a/b, return_step: end, task: x, input: {u: 1}}
      - {name: tres, kind: transfer, source: {type: result, ref: "{{ start._ref }}"}, target: {type: postgres, auth: pg, table: t}, mode: replace}
`)
	ts := p.Step("start").Tasks
	if h := ts[9]; h.Config["url"] != "http://x" || h.Config["endpoint"] != nil {
		t.Errorf("http endpoint → url: %v", h.Config)
	}
	if py := ts[10]; py.Script == nil || *py.Script != (Script{URI: "/tmp/a.py", Source: "file", Line: 18, Path: "workflow[0].tool[10].script"}) || py.Config != nil {
		t.Errorf("python script = %+v", py.Script)
	}
	if pg := ts[11]; pg.Script == nil || pg.Script.Source != "gcs" || pg.Config["auth"] != "pg" {
		t.Errorf("postgres script = %+v", pg.Script)
	}

	mk := func(task string) string { return hdr + "  - step: start\n    tool: " + task + "\n" }
	cases := []struct {
		name, task string
		path, msg  string
	}{
		{"container", "{kind: container, image: x}", "workflow[0].tool.kind", `task kind "container" is not available on this stack: it needs a container runtime`},
		{"script kind", "{kind: script, script: {uri: x}}", "workflow[0].tool.kind", "it needs a Kubernetes cluster (it runs the script as a Kubernetes Job)"},
		{"ducklake", "{kind: ducklake, query: x}", "workflow[0].tool.kind", "it needs a DuckLake catalog database"},
		{"snowflake", "{kind: snowflake, query: x}", "workflow[0].tool.kind", "it needs a Snowflake account"},
		{"unknown key", "{kind: duckdb, query: x, warehouse: w}", "workflow[0].tool.warehouse", `task key "warehouse" is not read by kind duckdb`},
		{"url and endpoint", "{kind: http, url: a, endpoint: b}", "workflow[0].tool.endpoint", "has both url and endpoint"},
		{"nats operation", "{kind: nats, operation: kv_scan}", "workflow[0].tool.operation", `nats operation "kv_scan" is not available here`},
		{"nats needs operation", "{kind: nats, bucket: b}", "workflow[0].tool.operation", "operation is required for a nats task"},
		{"kafka topic", "{kind: subscription, source: kafka, brokers: [b]}", "workflow[0].tool.topic", "topic is required for a kafka subscription task"},
		{"kafka brokers", "{kind: subscription, source: kafka, topic: t, group: g}", "workflow[0].tool.brokers", "a kafka subscription task needs its brokers"},
		{"kafka key on pubsub", "{kind: subscription, source: pubsub, subscription: s, topic: t}", "workflow[0].tool.topic", "subscription topic is a key of kafka sources"},
		{"pubsub subscription", "{kind: subscription, source: pubsub}", "workflow[0].tool.subscription", "subscription is required for a pubsub subscription task"},
		{"subscription op", "{kind: subscription, source: pubsub, operation: listen}", "workflow[0].tool.operation", `subscription operation "listen"`},
		{"transfer snowflake", "{kind: transfer, source: {type: snowflake, query: q}, target: {type: postgres}}", "workflow[0].tool.source.type", "transfer source type snowflake needs a Snowflake account"},
		{"transfer target", "{kind: transfer, source: {type: http}, target: {type: http}}", "workflow[0].tool.target.type", `unknown transfer target type "http" (one of postgres, duckdb, s3)`},
		{"transfer no type", "{kind: transfer, source: {url: x}, target: {type: postgres}}", "workflow[0].tool.source.type", "transfer source needs type"},
		{"transfer missing target", "{kind: transfer, source: {type: http}}", "workflow[0].tool.target", "target is required for a transfer task"},
		{"secrets provider", "{kind: secrets, provider: aws, secret_name: s}", "workflow[0].tool.provider", `secrets provider "aws" needs an outside secret manager`},
		{"artifact put", "{kind: artifact, action: put, input: {result_ref: x}}", "workflow[0].tool.action", "artifact action put is not available"},
		{"artifact ref", "{kind: artifact, action: get}", "workflow[0].tool.input.result_ref", "an artifact get needs input.result_ref"},
		{"duckdb remote", "{kind: duckdb, database: \"md:my_db\", query: x}", "workflow[0].tool.database", "needs a remote service or a DuckDB extension download"},
		{"duckdb remote path", "{kind: duckdb, path: \"s3://b/x.duckdb\", query: x}", "workflow[0].tool.path", "needs a remote service or a DuckDB extension download"},
		{"duckdb remote db", "{kind: duckdb, db: \"md:my_db\", query: x}", "workflow[0].tool.db", "needs a remote service or a DuckDB extension download"},
		{"gcs action", "{kind: gcs, action: sync, source: a, destination: b}", "workflow[0].tool.action", `gcs action "sync"`},
		{"script on http", "{kind: http, url: x, script: {source: {type: inline, code: y}}}", "workflow[0].tool.script", "task key script is not read by kind http"},
		{"script s3 uri", "{kind: python, script: {uri: \"gs://b/k\", source: {type: s3}}}", "workflow[0].tool.script.uri", "an s3 script's uri must look like s3://bucket"},
		{"script gcs uri", "{kind: python, script: {uri: /x.py, source: {type: gcs}}}", "workflow[0].tool.script.uri", "gs://bucket/path/to/script"},
		{"script inline code", "{kind: python, script: {source: {type: inline}}}", "workflow[0].tool.script.source.code", "an inline script needs script.source.code"},
		{"script http", "{kind: python, script: {source: {type: http, method: FETCH}}}", "workflow[0].tool.script.uri", "an http script needs script.source.endpoint or script.uri"},
		{"script type", "{kind: python, script: {uri: x, source: {type: ftp}}}", "workflow[0].tool.script.source.type", `unknown script.source.type "ftp"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := loadErr(t, mk(c.task))
			found := false
			for _, q := range ve.Problems {
				found = found || (q.Path == c.path && strings.Contains(q.Message, c.msg) && q.Line == 7)
			}
			if !found {
				t.Errorf("no problem 7 %s %q in:\n%s", c.path, c.msg, FormatProblems("test.yaml", ve.Problems))
			}
		})
	}
	// A key NoETL's own fixtures carry but no tool reads: warned and dropped.
	p = mustLoad(t, mk("{kind: noop, iterator: {items: x}}"))
	warned(t, p, 7, "tool.iterator is not read by any kind")
	if p.Step("start").Tasks[0].Config != nil {
		t.Errorf("config = %v", p.Step("start").Tasks[0].Config)
	}
	// Validate on a Go-built task checks keys against the table too.
	gp := &Playbook{APIVersion: APIVersion, Kind: "Playbook", Metadata: Metadata{Name: "g"},
		Workflow: []*Step{{Name: "start", Tasks: []*Task{{Name: "t", Kind: "noop", Config: map[string]any{"url": "x"}}}}}}
	if got := FormatProblems("g", gp.Validate()); !strings.Contains(got, `task key "url" is not read by kind noop (it reads: message, result)`) {
		t.Errorf("Validate = %s", got)
	}
	// Every kind has a key table and every unsupported kind a reason.
	for _, k := range Kinds {
		if _, ok := KindKeys[k]; !ok {
			t.Errorf("kind %s has no key table", k)
		}
		if UnsupportedKinds[k] != "" {
			t.Errorf("kind %s is both supported and not", k)
		}
	}
}

func TestTemplateProblems(t *testing.T) {
	ve := loadErr(t, hdr+`  - step: start
    tool:
      kind: http
      url: "{{ workload.api }"
      spec:
        policy:
          rules:
            - when: "{{ output.status == }}"
              then: {do: continue}
    set: {ctx.x: "{% if x %}"}
    next:
      arcs: [{step: start, when: "{{ ctx.x | nosuchfilter }}"}]
`)
	find(t, ve.Problems, 9, "workflow[0].tool.url", `template does not parse: template "{{ workload.api }"`)
	find(t, ve.Problems, 13, "workflow[0].tool.spec.policy.rules[0].when", "template does not parse")
	find(t, ve.Problems, 15, "workflow[0].set.ctx.x", "template does not parse")
	find(t, ve.Problems, 17, "workflow[0].next.arcs[0].when", "no filter named 'nosuchfilter'")
	if len(ve.Problems) != 4 {
		t.Errorf("problems:\n%s", FormatProblems("test.yaml", ve.Problems))
	}

	// Python code is passed verbatim: not a template.
	mustLoad(t, hdr+"  - step: start\n    tool: {kind: python, code: \"x = '{{'\\nresult = {%s: 1}\"}\n")

	p := mustLoad(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t}
workload: {api: x, rows: [1]}
workflow:
  - step: start
    loop: {in: "{{ rows }}", iterator: row}
    input: {token: "{{ keychain.tok }}"}
    tool:
      - name: fetch
        kind: http
        url: "{{ api }}/{{ row }}/{{ loop_index }}/{{ token }}/{{ missing_name }}"
        params: {a: "{% for k in range(3) %}{{ k }}{{ loop.index }}{% endfor %}{% set y = 1 %}{{ y }}"}
      - name: use
        kind: noop
        result: "{{ fetch.data }} {{ start }} {{ _prev }} {{ other | default(1) }} {{ output.data }} {{ step.x }}"
    next:
      arcs: [{step: start, when: "{{ event.name == 'loop.done' and ctx.more and execution_id }}"}]
`)
	var unknown []Problem
	for _, w := range p.Warnings {
		if w.Code == LintUnknownName {
			unknown = append(unknown, w)
		}
	}
	if len(unknown) != 2 || unknown[0].Line != 12 || unknown[0].Path != "workflow[0].tool[0].url" || !strings.Contains(unknown[0].Message, `reads the name "missing_name", which no scope defines`) ||
		unknown[1].Line != 16 || !strings.Contains(unknown[1].Message, `"other"`) {
		t.Errorf("unknown-name warnings:\n%s", FormatProblems("test.yaml", unknown))
	}
	hasFinding(t, Lint(p), LintUnknownName, 12, "missing_name")
}

func TestAPIVersionV10AndMetadata(t *testing.T) {
	p := mustLoad(t, "apiVersion: noetl.io/v10\nkind: Playbook\nmetadata: {name: t, tags: [a], exposes_as_mcp: false}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n")
	if p.APIVersion != APIVersion || len(p.Warnings) != 0 || !reflect.DeepEqual(p.Metadata.Extra, map[string]any{"tags": []any{"a"}, "exposes_as_mcp": false}) {
		t.Errorf("v10 playbook: %q %v %v", p.APIVersion, p.Warnings, p.Metadata.Extra)
	}
}

// TestTemplateNames covers shared/template's Names (that package may not
// grow a test file of its own in this change).
func TestTemplateNames(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		want []string
	}{
		{"plain text", nil},
		{"{{ ctx.page + workload.size }}", []string{"ctx", "workload"}},
		{"{{ users | map(attribute='id') | list }}", []string{"users"}},
		{"{{ a[b.c] }} {{ d['e'] }} {{ f(g, h=i) }}", []string{"a", "b", "d", "f", "g", "i"}},
		{"{{ x if y else z }}", []string{"x", "y", "z"}},
		{"{{ true and false or none }} {{ True }} {{ 1 }} {{ 'a' ~ n }}", []string{"n"}},
		{"{{ range(3) | list }} {{ dict(a=1) }} {{ namespace(x=v) }}", []string{"v"}},
		{"{% for k, v in items.items() if v > lim %}{{ k }}{{ v }}{{ loop.index }}{{ outer }}{% endfor %}{{ k }}", []string{"items", "k", "lim", "outer"}},
		{"{% set s = base %}{{ s }}{% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}", []string{"base"}},
		{"{% with a = b %}{{ a }}{{ c }}{% endwith %}{{ a }}", []string{"a", "b", "c"}},
		{"{% if p is defined and q in r %}{{ s[1:t] }}{% else %}{{ -u }}{% endif %}", []string{"p", "q", "r", "s", "t", "u"}},
		{"{% filter upper %}{{ w }}{% endfilter %} {{ [x1, (x2, x3)] }} {{ {'k': x4} }} {{ not x5 }}", []string{"w", "x1", "x2", "x3", "x4", "x5"}},
		{"{{ _prev.data }} {{ __frame_max_rows | default(1) }}", []string{"__frame_max_rows", "_prev"}},
	} {
		got, err := template.Names(c.tmpl)
		if err != nil {
			t.Errorf("Names(%q): %v", c.tmpl, err)
			continue
		}
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Names(%q) = %v, want %v", c.tmpl, got, c.want)
		}
	}
	var te *template.Error
	if _, err := template.Names("{{ a +"); !errors.As(err, &te) || te.Template != "{{ a +" {
		t.Errorf("parse error = %v", err)
	}
}

func TestWorkbookCallOverrides(t *testing.T) {
	src := hdr + "  - step: start\n    tool: {kind: workbook, name: fetch, url: \"http://other\", input: {a: 1}, spec: {knob: 1}}\nworkbook:\n  - name: fetch\n    tool: {kind: http, url: \"http://x\"}\n"
	p := mustLoad(t, src)
	if c := p.Step("start").Tasks[0]; c.Config["url"] != "http://other" || c.Input["a"] != 1 || c.Spec["knob"] != 1 {
		t.Errorf("workbook call = %+v", c)
	}
	ve := loadErr(t, strings.Replace(src, `url: "http://other"`, "code: x", 1))
	find(t, ve.Problems, 7, "workflow[0].tool.code", `task key "code" is not read by the http entry "fetch" this workbook task calls`)
	// final_step: end gets no implicit arcs (end runs once at the end anyway).
	p = mustLoad(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nexecutor: {spec: {final_step: end}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n  - step: end\n    tool: {kind: noop}\n")
	if p.Step("start").Next != nil {
		t.Errorf("start.Next = %+v", p.Step("start").Next)
	}
}

func TestPrepareGoBuiltPlaybook(t *testing.T) {
	noop := func() []*Task { return []*Task{{Name: "t", Kind: "noop"}} }
	p := &Playbook{APIVersion: APIVersion, Kind: "Playbook", Metadata: Metadata{Name: "g"}, Workflow: []*Step{
		{Name: "first", Tasks: noop(), Next: &Next{Mode: "inclusive", Arcs: []*Arc{{Step: "a"}, {Step: "b"}}}},
		{Name: "a", Tasks: noop()},
		{Name: "b", Tasks: noop()},
		{Name: "end", Tasks: noop()},
	}}
	if ps := p.Validate(); len(ps) > 0 {
		t.Fatalf("Validate: %v", ps)
	}
	p.Prepare()
	p.Prepare() // idempotent
	if p.Entry != "first" {
		t.Errorf("entry = %q", p.Entry)
	}
	for _, name := range []string{"a", "b"} {
		if nx := p.Step(name).Next; nx == nil || len(nx.Arcs) != 1 || !nx.Arcs[0].Implicit || nx.Arcs[0].Step != "end" {
			t.Errorf("%s.Next = %+v", name, nx)
		}
	}
	if got := p.Step("end").JoinOf; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("end.JoinOf = %v", got)
	}
}

// TestTransferEndSpellings: the validator refused spellings of a
// transfer end's type that the transfer tool reads (https, postgresql,
// results, artifact), and the top level's batch_size and the insert,
// truncate, overwrite and merge modes.
func TestTransferEndSpellings(t *testing.T) {
	mustLoad(t, hdr+`  - step: start
    tool:
      - {name: a, kind: transfer, source: {type: https, url: "http://x"}, target: {type: postgresql, auth: pg, table: t}, batch_size: 10, mode: insert}
      - {name: b, kind: transfer, source: {type: postgresql, auth: pg, query: "SELECT 1"}, target: {type: duckdb, database: a.duckdb, table: t}, mode: truncate}
      - {name: c, kind: transfer, source: {type: results, ref: "{{ start._ref }}"}, target: {type: postgres, auth: pg, table: t}, mode: merge, direction: result_to_postgres}
      - {name: d, kind: transfer, source: {type: artifact, ref: "{{ start._ref }}"}, target: {type: postgres, auth: pg, table: t}, mode: overwrite}
`)
}
