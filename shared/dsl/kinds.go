package dsl

import (
	"fmt"
	"sort"
	"strings"
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
// them.
var Kinds = []string{
	"noop", "http", "python", "postgres", "playbook", "workbook",
	"duckdb", "transfer", "gcs", "secrets", "nats", "shell",
	"subscription", "artifact", "result_fetch",
}

// CommonTaskKeys are the task keys the loader reads for every kind: the
// label (name), kind, input (and its v10 spelling args), spec (policy,
// timeout and tool knobs), timeout, legacy retry, set (composite tool
// items), output (and NoETL's tool-level output_select), assert (NoETL's
// workbook contracts, kept verbatim) and the legacy type.
var CommonTaskKeys = []string{"name", "kind", "type", "input", "args", "spec", "timeout", "timeout_ms", "retry", "set", "output", "output_select", "assert"}

// KindKeys maps each kind to the kind-specific keys it reads (kept in
// Task.Config; script goes to Task.Script). Source, per kind:
//
//   - noop: message, result (noetl-tools NoopConfig: result is returned
//     as the task's result);
//   - http: url (endpoint is its NoETL spelling, loaded as url), method,
//     headers, params (query is this engine's alias), body, json, form,
//     data and payload (NoETL python executor body aliases),
//     timeout_seconds, follow_redirects, response_type, verify / verify_ssl,
//     auth / credential (noetl-tools HttpConfig; noetl http executor);
//   - python: code, code_b64, script, libs, deps, packages, env, python,
//     cwd, timeout_seconds, auth (noetl-tools PythonConfig; noetl python
//     executor);
//   - postgres: command/commands/query/queries/sql/cmd/cmds and their
//     _b64 forms, script, params, auth/credential, connection/dsn/
//     connection_string, host/port/database/user/password/schema and the
//     db_* spellings, as_objects, pool (noetl-tools PostgresConfig; noetl
//     postgres command.py);
//   - playbook: path, catalog_id, version, workload (this engine: the
//     child's workload, merged with the task's input), payload,
//     return_step, return_result, result_step, poll_interval, task
//     (noetl-tools PlaybookConfig; NoETL fixtures' task label);
//   - workbook: name (the workbook entry), plus any key the called entry's
//     kind reads (it overrides the entry's value);
//   - duckdb: query/command/commands/sql, params, database / db_path,
//     as_objects, auth/credentials (noetl-tools DuckdbConfig; noetl duckdb
//     config: only local files and :memory:, no extensions); gcs_credential
//     is known only to be rejected (it needs the httpfs extension);
//   - transfer: source, target (each {type: http|postgres|duckdb, ...}),
//     chunk_size, mode (append|replace|upsert), direction (noetl-tools
//     TransferConfig);
//   - gcs: action (upload, the default, or download), source, destination,
//     content_type, metadata, credential, auth (noetl gcs executor:
//     source file → gs:// destination, and the reverse for download);
//   - secrets: provider (env or credential here; google/gcp in the cloud),
//     secret_name, key, project_id, version, default, auth, credential
//     (noetl core/secrets);
//   - nats: operation, bucket, key, value, ttl, pattern, data,
//     encoding, description, stream, subject, headers, seq, last,
//     consumer, batch, timeout_ms, ack, url, user, password, token,
//     auth, nats_url, nats_user, nats_password, nats_token, tls_ca,
//     tls_cert, tls_key (noetl-tools NatsConfig; noetl nats executor);
//   - shell: command, commands, cmds, shell, cwd, env, timeout_seconds,
//     capture (noetl-tools ShellConfig);
//   - subscription: source, operation, auth, batch, timeout_ms, ack,
//     ack_ids, nack_delay_ms, subscription, endpoint, url, user, password,
//     token, stream, consumer (noetl-tools SubscriptionConfig; kafka's
//     brokers/topic/group are rejected with the kafka source);
//   - artifact: action, uri, data, compress, credential, prefer,
//     flight_endpoint, bearer_token, tls_ca_path, client_cert_path,
//     client_key_path (noetl-tools ArtifactConfig; noetl artifact
//     executor); the reference is input.result_ref;
//   - result_fetch: ref, prefer, flight_endpoint, bearer_token,
//     tls_ca_path, client_cert_path, client_key_path (noetl-tools
//     ResultFetchConfig).
var KindKeys = map[string][]string{
	"noop": {"message", "result"},
	"http": {"url", "endpoint", "method", "headers", "params", "query", "body", "json", "form", "data", "payload",
		"timeout_seconds", "follow_redirects", "response_type", "verify", "verify_ssl", "auth", "credential"},
	"python": {"code", "code_b64", "script", "libs", "deps", "packages", "env", "python", "cwd", "timeout_seconds", "auth"},
	"postgres": {"command", "commands", "query", "queries", "sql", "cmd", "cmds", "command_b64", "commands_b64", "query_b64",
		"script", "params", "auth", "credential", "connection", "dsn", "connection_string", "host", "port", "database", "user",
		"password", "schema", "db_host", "db_port", "db_name", "db_user", "db_password", "db_conn_string", "as_objects", "pool"},
	"playbook": {"path", "catalog_id", "version", "workload", "payload", "return_step", "return_result", "result_step", "poll_interval", "task"},
	"workbook": {},
	"duckdb":   {"query", "command", "commands", "sql", "params", "database", "db_path", "as_objects", "auth", "credentials", "gcs_credential"},
	"transfer": {"source", "target", "chunk_size", "mode", "direction"},
	"gcs":      {"action", "source", "destination", "content_type", "metadata", "credential", "auth"},
	"secrets":  {"provider", "secret_name", "key", "project_id", "version", "default", "auth", "credential"},
	"nats": {"operation", "bucket", "key", "value", "ttl", "pattern", "data", "encoding", "description", "stream",
		"subject", "headers", "seq", "last", "consumer", "batch", "timeout_ms", "ack", "url", "user", "password", "token",
		"auth", "nats_url", "nats_user", "nats_password", "nats_token", "tls_ca", "tls_cert", "tls_key"},
	"shell": {"command", "commands", "cmds", "shell", "cwd", "env", "timeout_seconds", "capture"},
	"subscription": {"source", "operation", "auth", "batch", "timeout_ms", "ack", "ack_ids", "nack_delay_ms", "subscription",
		"endpoint", "url", "user", "password", "token", "stream", "consumer", "brokers", "topic", "group"},
	"artifact":     {"action", "uri", "data", "compress", "credential", "prefer", "flight_endpoint", "bearer_token", "tls_ca_path", "client_cert_path", "client_key_path"},
	"result_fetch": {"ref", "prefer", "flight_endpoint", "bearer_token", "tls_ca_path", "client_cert_path", "client_key_path"},
}

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

// unknownKindMessage is the error for a kind the engine does not have.
func unknownKindMessage(kind string) string {
	if need, ok := UnsupportedKinds[kind]; ok {
		return fmt.Sprintf("task kind %q is not available on this stack: it needs %s (kinds here: %s)", kind, need, strings.Join(Kinds, ", "))
	}
	return fmt.Sprintf("unknown task kind %q (one of %s)", kind, strings.Join(Kinds, ", "))
}

// kindRequirements lists, per kind, alternatives of which one must be
// present (in Config, or Script for "script"); checked by Validate.
var kindRequirements = map[string][][]string{
	"http":         {{"url"}},
	"python":       {{"code", "code_b64", "script"}},
	"postgres":     {{"command", "commands", "query", "queries", "sql", "cmd", "cmds", "command_b64", "commands_b64", "query_b64", "script"}},
	"playbook":     {{"path", "catalog_id"}},
	"duckdb":       {{"query", "command", "commands", "sql"}},
	"transfer":     {{"source"}, {"target"}},
	"gcs":          {{"source"}, {"destination"}},
	"nats":         {{"operation"}},
	"shell":        {{"command", "commands", "cmds"}},
	"subscription": {{"source"}},
	"result_fetch": {{"ref"}},
}

// Literal values checked per kind (a template is checked at run time).
var (
	natsOperations = []string{"kv_get", "kv_put", "kv_delete", "kv_keys", "kv_purge", "object_get", "object_put",
		"object_delete", "object_list", "object_info", "publish", "js_publish", "js_consume", "js_get_msg", "js_stream_info"}
	subscriptionSources    = []string{"pubsub", "nats"}
	subscriptionOperations = []string{"poll", "ack", "nack", "nak", "term"}
	transferSources        = []string{"http", "postgres", "duckdb", "result"}
	transferTargets        = []string{"postgres", "duckdb"}
	transferModes          = []string{"append", "replace", "upsert"}
	gcsActions             = []string{"upload", "download"}
	secretProviders        = []string{"env", "credential", "google", "gcp"}
	artifactActions        = []string{"get"}
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

// requirements reports the required keys (kindRequirements) missing from
// t; via names the workbook entry a calling task is merged with ("" for a
// task of its own).
func (v *validator) requirements(t *Task, tp, via string) {
	for _, alts := range kindRequirements[t.Kind] {
		found := false
		for _, k := range alts {
			if k == "script" && t.Script != nil || present(t.Config[k]) {
				found = true
				break
			}
		}
		if !found {
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
}

// kindValues checks the literal values of a task's kind-specific keys.
func (v *validator) kindValues(t *Task, tp string) {
	if t.Script != nil && t.Kind != "python" && t.Kind != "postgres" {
		v.add(tp+".script", t.Line, "script: is only read by python and postgres tasks")
	}
	check := func(key string, set []string, what string) {
		if s, ok := literal(t.Config[key]); ok && !oneOf(s, set) {
			v.add(tp+"."+key, t.Line, "%s %q is not available here (one of %s)", what, s, strings.Join(set, ", "))
		}
	}
	switch t.Kind {
	case "nats":
		check("operation", natsOperations, "nats operation")
	case "subscription":
		if s, ok := literal(t.Config["source"]); ok && s == "kafka" {
			v.add(tp+".source", t.Line, "subscription source kafka needs Kafka brokers, which this stack does not have (sources here: pubsub, nats)")
		} else {
			check("source", subscriptionSources, "subscription source")
		}
		check("operation", subscriptionOperations, "subscription operation")
		for _, k := range []string{"brokers", "topic", "group"} {
			if _, ok := t.Config[k]; ok {
				v.add(tp+"."+k, t.Line, "subscription %s is for kafka sources, which need Kafka brokers (not available here)", k)
			}
		}
	case "transfer":
		v.transferEnd(t, tp, "source", transferSources)
		v.transferEnd(t, tp, "target", transferTargets)
		check("mode", transferModes, "transfer mode")
	case "gcs":
		check("action", gcsActions, "gcs action")
	case "secrets":
		if s, ok := literal(t.Config["provider"]); ok && !oneOf(s, secretProviders) {
			v.add(tp+".provider", t.Line, "secrets provider %q needs an outside secret manager this stack does not have (providers here: env, credential; google/gcp in the cloud)", s)
		}
	case "artifact":
		if s, ok := literal(t.Config["action"]); ok && s == "put" {
			v.add(tp+".action", t.Line, "artifact action put is not available: a task's result is stored by the engine (output.store); read it back with action: get")
		} else {
			check("action", artifactActions, "artifact action")
		}
		if !present(t.Input["result_ref"]) && !present(t.Config["uri"]) {
			v.add(tp+".input.result_ref", t.Line, "an artifact get needs input.result_ref (a stored result's reference, e.g. \"{{ start._ref }}\")")
		}
	case "duckdb":
		if _, ok := t.Config["gcs_credential"]; ok {
			// NoETL's duckdb tool creates a DuckDB GCS secret (HMAC keys)
			// for httpfs from gcs_credential (noetl/tools/duckdb).
			v.add(tp+".gcs_credential", t.Line, "duckdb gcs_credential reads and writes gs:// objects through DuckDB's httpfs extension, which this stack does not download (DuckDB here reads local files and :memory: only): move the data with a gcs task (upload/download) and a local file")
		}
		for _, k := range []string{"database", "db_path"} {
			if s, ok := literal(t.Config[k]); ok && (strings.HasPrefix(s, "md:") || strings.Contains(s, "://")) {
				v.add(tp+"."+k, t.Line, "duckdb %s %q needs a remote service or a DuckDB extension download; only local files and :memory: are available", k, s)
			}
		}
	}
}

// transferEnd checks a transfer's source or target block.
func (v *validator) transferEnd(t *Task, tp, side string, types []string) {
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
	case !oneOf(s, types):
		v.add(tp+"."+side+".type", t.Line, "unknown transfer %s type %q (one of %s)", side, s, strings.Join(types, ", "))
	}
}
