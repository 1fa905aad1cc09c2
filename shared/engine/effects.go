package engine

import (
	"regexp"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
)

// Side effects (NoETL result storage RFC §4.4, the side-effect barrier). A task is
// side-effecting when running it twice could be observed outside the
// engine. The worker runs a unit containing one under a lease (a second
// delivery of the same unit waits instead of running it concurrently), and
// a unit of only read-only tasks without one (a duplicate run is harmless:
// the checkpoint applies its boundary once). The classification is static
// and conservative: anything not provably read-only is side-effecting.
// `spec.side_effects: false` on a task declares it read-only (and `true`
// side-effecting) explicitly.

// readOnlyKinds are kinds that never change anything outside the engine.
var readOnlyKinds = map[string]bool{"noop": true, "secrets": true, "artifact": true, "result_fetch": true}

// readSQL matches SQL that only reads: SELECT / WITH ... SELECT / SHOW /
// EXPLAIN / VALUES / TABLE, with no data-changing keyword anywhere.
var (
	readSQLStart = regexp.MustCompile(`(?is)^\s*(select|with|show|explain|values|table)\b`)
	writeSQL     = regexp.MustCompile(`(?i)\b(insert|update|delete|merge|upsert|create|drop|alter|truncate|grant|revoke|copy|call|do|lock|vacuum|refresh|cluster|reindex|comment|nextval|setval|into)\b`)
)

// SideEffecting reports whether running task could have an effect outside
// the engine: http other than GET/HEAD, postgres that writes, python,
// playbook (a child execution), shell, transfer, ... (every kind but
// noop and the readers).
func SideEffecting(pb *dsl.Playbook, task *dsl.Task) bool {
	if v, ok := task.Spec["side_effects"].(bool); ok {
		return v
	}
	kind := task.Kind
	cfg := task.Config
	if kind == "workbook" && pb != nil {
		name, _ := cfg["name"].(string)
		if name == "" {
			name = task.Workbook
		}
		wt := pb.Workbook[name]
		if wt == nil {
			return true
		}
		kind, cfg = wt.Kind, mergeCfg(wt.Config, cfg)
	}
	if readOnlyKinds[kind] {
		return false
	}
	switch kind {
	case "http":
		m, ok := cfg["method"].(string)
		if !ok {
			return cfg["method"] != nil // templated or odd: conservative
		}
		m = strings.ToUpper(strings.TrimSpace(m))
		return m != "GET" && m != "HEAD" && m != ""
	case "postgres":
		sql := ""
		for _, k := range []string{"query", "command", "sql"} {
			if s, ok := cfg[k].(string); ok {
				sql += s + ";"
			}
		}
		if sql == "" {
			return true
		}
		for _, stmt := range strings.Split(sql, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if !readSQLStart.MatchString(stmt) || writeSQL.MatchString(stmt) {
				return true
			}
		}
		return false
	}
	return true
}

func mergeCfg(base, over map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// StepSideEffecting reports whether any task of step is side-effecting, or
// the step is a cursor loop (its units claim work rows).
func StepSideEffecting(pb *dsl.Playbook, step *dsl.Step) bool {
	if step.Loop != nil && step.Loop.Cursor != nil {
		return true // a cursor loop's units claim rows (cursor.go)
	}
	for _, t := range step.Tasks {
		if SideEffecting(pb, t) {
			return true
		}
	}
	return false
}
