package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/toolspec"
)

// This file is the per-kind table of task keys: which keys each task kind
// reads, which it requires, and which NoETL kinds this stack cannot run.
// The keys come from NoETL's tool implementations (noetl/tools, the Rust
// tool registry: src/tools/*.rs config structs and their serde aliases;
// noetl/noetl noetl/tools/*: the Python executors' task_config reads),
// restricted to what can run on one machine with the local stack
// (NoETL DSL spec "Tasks"; README "Running NoETL v2 playbooks").
// A task key that neither the loader (CommonTaskKeys) nor the task's kind
// reads is a validation error: NoETL silently ignores such keys, which
// hides typos and misplaced fields.

// Kinds lists the task kinds the engine has, in the order messages list
// them (toolspec.Kinds: one typed spec per kind).
var Kinds = toolspec.Kinds()

// CommonTaskKeys are the task keys the loader reads for every kind: the
// label (name), kind, input (and its v10 spelling args), spec (policy,
// timeout and tool knobs), timeout, legacy retry, set (composite tool
// items), output (and NoETL's tool-level output_select), assert (NoETL's
// workbook contracts, kept verbatim) and the legacy type.
var CommonTaskKeys = []string{"name", "kind", "type", "input", "args", "spec", "timeout", "timeout_ms", "retry", "set", "output", "output_select", "assert"}

// KindKeys maps each kind to the kind-specific keys it reads (kept in
// Task.Config; script goes to Task.Script): every key and alias of the
// kind's typed spec (shared/toolspec, where each key's meaning, type,
// enumeration and NoETL source are declared once, for this validator, the
// tool that decodes its configuration into the same struct, and the JSON
// Schema). Workbook calls read the keys of the entry they call.
var KindKeys = func() map[string][]string {
	out := map[string][]string{}
	for _, k := range toolspec.Kinds() {
		if k == "workbook" {
			out[k] = []string{}
			continue
		}
		out[k] = toolspec.Keys(k)
	}
	return out
}()

// IgnoredTaskKeys are keys found in NoETL's own fixtures that no NoETL tool
// reads either: Load warns and drops them instead of failing.
var IgnoredTaskKeys = map[string]string{
	"iterator": "tool.iterator is not read by any kind (NoETL ignores it too): dropped; to run a task per element, give the step a loop: {in: ..., iterator: ...}",
}

// UnsupportedKinds names, for each NoETL tool kind this stack cannot run,
// what it would need; Load rejects such a task with that message.
var UnsupportedKinds = map[string]string{
	"snowflake":          "a Snowflake account",
	"snowflake_transfer": "a Snowflake account",
	"container":          "a container runtime on a Kubernetes cluster (it runs the task as a pod)",
	"script":             "a Kubernetes cluster (it runs the script as a Kubernetes Job); for python or SQL from a file, gcs or http, use kind python or postgres with a script: block",
	"ducklake":           "a DuckLake catalog database, object storage and DuckDB extension downloads",
	"gateway":            "NoETL's API gateway service",
	"agent":              "an LLM agent runtime",
	"mcp":                "an MCP server",
	"rhai":               "the Rhai script engine of NoETL's Rust worker",
	"wasm":               "NoETL's WASM plug-in host",
	"iterator":           "NoETL's legacy iterator tool; give the step a loop: {in: ..., iterator: ...} instead",
	"playbooks":          "NoETL's legacy multi-playbook tool; use one kind: playbook task per child",
	"task_sequence":      "nothing: it is NoETL's internal wrapper of a step's tool list; write the tasks as tool: [...]",
}

// kindKeySet is KindKeys as sets, plus the common keys.
var kindKeySet = func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for k, keys := range KindKeys {
		m := map[string]bool{}
		for _, x := range keys {
			m[x] = true
		}
		out[k] = m
	}
	return out
}()

var commonKeySet = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range CommonTaskKeys {
		m[k] = true
	}
	return m
}()

// kindReads reports whether a task of kind reads key (common or
// kind-specific); true for unknown kinds (they are reported once, by kind)
// and for kind workbook, whose call may override the config of the entry
// it calls (Validate checks those keys against the entry's kind).
func kindReads(kind, key string) bool {
	if commonKeySet[key] || kind == "workbook" {
		return true
	}
	keys, known := kindKeySet[kind]
	if !known {
		return true
	}
	return keys[key]
}

// kindOwnKey reports whether kind's own configuration reads key (its
// tool spec's keys: a common task key such as timeout_ms counts only if
// the kind reads it as well, e.g. subscription's poll timeout_ms).
// Unknown kinds and workbook calls read every key, as kindReads.
func kindOwnKey(kind, key string) bool {
	if kind == "workbook" {
		return true
	}
	keys, known := kindKeySet[kind]
	return !known || keys[key]
}

// knownKind reports whether the engine has the kind.
func knownKind(kind string) bool {
	_, ok := kindKeySet[kind]
	return ok
}

// kindKeysList renders the keys a kind reads, for messages.
func kindKeysList(kind string) string {
	keys := append([]string(nil), KindKeys[kind]...)
	sort.Strings(keys)
	if len(keys) == 0 {
		return "none besides " + strings.Join(CommonTaskKeys[:6], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}

// unknownKeyMessage is the error for a task key its kind does not read:
// it names the kind's keys and the nearest spelling among them.
func unknownKeyMessage(kind, key string) string {
	return fmt.Sprintf("task key %q is not read by kind %s (it reads: %s)%s", key, kind, kindKeysList(kind), didYouMean(kind, key))
}

// didYouMean suggests the key of kind (or common task key) nearest to key
// ("; did you mean \"url\"?"), or "".
func didYouMean(kind, key string) string {
	names := append(append([]string(nil), KindKeys[kind]...), CommonTaskKeys...)
	if best := nearest(key, names); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// unknownKindMessage is the error for a kind the engine does not have.
func unknownKindMessage(kind string) string {
	if need, ok := UnsupportedKinds[kind]; ok {
		return fmt.Sprintf("task kind %q is not available on this stack: it needs %s (kinds here: %s)", kind, need, strings.Join(Kinds, ", "))
	}
	if best := nearest(kind, Kinds); best != "" {
		return fmt.Sprintf("unknown task kind %q: did you mean %q? (one of %s)", kind, best, strings.Join(Kinds, ", "))
	}
	return fmt.Sprintf("unknown task kind %q (one of %s)", kind, strings.Join(Kinds, ", "))
}

// The canonical types of a transfer's ends, as messages list them (the
// spellings accepted are toolspec.TransferSourceTypes and
// TransferTargetTypes; a template is checked at run time).
var (
	transferSources = []string{"http", "postgres", "duckdb", "result", "s3"}
	transferTargets = []string{"postgres", "duckdb", "s3"}
)

// literal returns a config value as a string when it is a literal string
// (not a template); ok is false otherwise.
func literal(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || strings.Contains(s, "{{") || strings.Contains(s, "{%") {
		return "", false
	}
	return s, true
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

// kindChecks validates the kind-specific values of a task (required keys
// and literal enumerations).
func (v *validator) kindChecks(t *Task, tp string) {
	if !v.inWorkbook {
		// A workbook entry may leave a required key to the tasks that
		// call it (their keys override the entry's): checked per call.
		v.requirements(t, tp, "")
	}
	v.kindValues(t, tp)
}

// requirements reports the required keys (the toolspec required groups)
// missing from t; via names the workbook entry a calling task is merged
// with ("" for a task of its own).
func (v *validator) requirements(t *Task, tp, via string) {
	for _, alts := range toolspec.Missing(t.Kind, t.Config, func(k string) bool { return k == "script" && t.Script != nil }) {
		what := alts[0] + " is"
		if len(alts) > 1 {
			what = "one of " + strings.Join(alts, ", ") + " is"
		}
		if via != "" {
			v.add(tp+"."+alts[0], t.Line, "%s required for a %s task: neither this task nor the workbook entry %q it calls gives it", what, t.Kind, via)
			continue
		}
		v.add(tp+"."+alts[0], t.Line, "%s required for a %s task", what, t.Kind)
	}
}

// kindValues checks the values of a task's kind-specific keys against its
// kind's spec (toolspec.Check: types, enumerations, two spellings of one
// key; a template is checked at run time), with the messages that name
// what an unavailable value would need.
func (v *validator) kindValues(t *Task, tp string) {
	if t.Script != nil && t.Kind != "python" && t.Kind != "postgres" {
		v.add(tp+".script", t.Line, "script: is only read by python and postgres tasks")
	}
	said := map[string]bool{} // keys given a message of their own here
	add := func(key, format string, a ...any) {
		said[key] = true
		v.add(tp+"."+key, t.Line, format, a...)
	}
	switch t.Kind {
	case "subscription":
		// The required keys depend on the source (toolspec.Subscription).
		src, known := literal(t.Config["source"])
		src = strings.ToLower(strings.TrimSpace(src))
		need := []string{}
		switch {
		case known && src == "kafka":
			need = []string{"topic", "group"}
			if !present(t.Config["brokers"]) && !present(t.Config["auth"]) && !present(t.Config["credential"]) {
				add("brokers", "a kafka subscription task needs its brokers: auth (a kafka credential {brokers}) or brokers (host:port)")
			}
		case known && src != "":
			need = []string{"subscription"}
			for _, k := range []string{"brokers", "topic", "group"} {
				if _, ok := t.Config[k]; ok {
					add(k, "subscription %s is a key of kafka sources (this task's source is %s)", k, src)
				}
			}
		}
		for _, k := range need {
			if !present(t.Config[k]) {
				add(k, "%s is required for a %s subscription task", k, src)
			}
		}
	case "transfer":
		v.transferEnd(t, tp, "source", transferSources, toolspec.TransferSourceTypes)
		v.transferEnd(t, tp, "target", transferTargets, toolspec.TransferTargetTypes)
	case "secrets":
		if s, ok := literal(t.Config["provider"]); ok && !oneOfFold(s, enumOf("secrets", "provider")) {
			add("provider", "secrets provider %q needs an outside secret manager this stack does not have (providers here: env, credential; google/gcp in the cloud)", s)
		}
	case "artifact":
		if s, ok := literal(t.Config["action"]); ok && s == "put" {
			add("action", "artifact action put is not available: a task's result is stored by the engine (output.store); read it back with action: get")
		}
		if !present(t.Input["result_ref"]) && !present(t.Config["uri"]) && !present(t.Config["ref"]) && !present(t.Config["result_ref"]) {
			v.add(tp+".input.result_ref", t.Line, "an artifact get needs input.result_ref (a stored result's reference, e.g. \"{{ start._ref }}\")")
		}
	case "duckdb":
		if _, ok := t.Config["gcs_credential"]; ok {
			// NoETL's duckdb tool creates a DuckDB GCS secret (HMAC keys)
			// for httpfs from gcs_credential (noetl/tools/duckdb).
			add("gcs_credential", "duckdb gcs_credential reads and writes gs:// objects through DuckDB's httpfs extension, which this stack does not download (DuckDB here reads local files and :memory: only): move the data with a gcs task (upload/download) and a local file")
		}
		for _, k := range []string{"database", "db_path", "path", "db"} {
			if s, ok := literal(t.Config[k]); ok && (strings.HasPrefix(s, "md:") || strings.Contains(s, "://")) {
				add(k, "duckdb %s %q needs a remote service or a DuckDB extension download; only local files and :memory: are available", k, s)
			}
		}
	}
	for _, p := range toolspec.Check(t.Kind, t.Config) {
		if p.Unknown || p.Warning || said[p.Key] {
			continue // unknown keys: Validate; ignored keys: Load warns
		}
		v.add(tp+"."+p.Key, t.Line, "%s", p.Message)
	}
}

// ignoredKey returns why kind accepts key without using it (its spec's
// ignored tag), or "".
func ignoredKey(kind, key string) string {
	for _, f := range toolspec.Fields(kind) {
		if f.Key == key || oneOf(key, f.Aliases) {
			return f.Ignored
		}
	}
	return ""
}

// enumOf returns the enumeration of kind's key (its spec's enum tag).
func enumOf(kind, key string) []string {
	for _, f := range toolspec.Fields(kind) {
		if f.Key == key {
			return f.Enum
		}
	}
	return nil
}

func oneOfFold(s string, set []string) bool {
	for _, x := range set {
		if strings.EqualFold(strings.TrimSpace(s), x) {
			return true
		}
	}
	return false
}

// transferEnd checks a transfer's source or target block.
func (v *validator) transferEnd(t *Task, tp, side string, types []string, spellings map[string]string) {
	m, ok := t.Config[side].(map[string]any)
	if !ok {
		if t.Config[side] != nil {
			v.add(tp+"."+side, t.Line, "transfer %s must be a mapping {type: ..., ...}", side)
		}
		return
	}
	typ, has := m["type"]
	if !has {
		for _, alias := range []string{"tool", "kind"} {
			if x, ok := m[alias]; ok {
				typ, has = x, true
			}
		}
	}
	if !has {
		v.add(tp+"."+side+".type", t.Line, "transfer %s needs type (one of %s)", side, strings.Join(types, ", "))
		return
	}
	s, ok := literal(typ)
	if !ok {
		return
	}
	s = strings.ToLower(s)
	switch {
	case s == "snowflake":
		v.add(tp+"."+side+".type", t.Line, "transfer %s type snowflake needs a Snowflake account, which this stack does not have (types here: %s)", side, strings.Join(types, ", "))
	default:
		if _, ok := toolspec.TransferEndType(spellings, s); ok {
			return
		}
		v.add(tp+"."+side+".type", t.Line, "unknown transfer %s type %q (one of %s)", side, s, strings.Join(types, ", "))
	}
}
