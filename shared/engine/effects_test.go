package engine

import (
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

func TestSideEffecting(t *testing.T) {
	http := func(method any) *dsl.Task {
		cfg := map[string]any{"url": "http://x"}
		if method != nil {
			cfg["method"] = method
		}
		return &dsl.Task{Name: "t", Kind: "http", Config: cfg}
	}
	pg := func(key, sql string) *dsl.Task {
		return &dsl.Task{Name: "t", Kind: "postgres", Config: map[string]any{key: sql, "auth": "pg"}}
	}
	kind := func(k string) *dsl.Task { return &dsl.Task{Name: "t", Kind: k} }
	withSpec := func(task *dsl.Task, v any) *dsl.Task {
		task.Spec = map[string]any{"side_effects": v}
		return task
	}
	wb := func(name string, cfg map[string]any) *dsl.Task {
		if cfg == nil {
			cfg = map[string]any{}
		}
		cfg["name"] = name
		return &dsl.Task{Name: "t", Kind: "workbook", Workbook: name, Config: cfg}
	}
	pb := &dsl.Playbook{Workbook: map[string]*dsl.Task{
		"reader": {Name: "reader", Kind: "http", Config: map[string]any{"method": "GET", "url": "http://x"}},
		"writer": {Name: "writer", Kind: "postgres", Config: map[string]any{"command": "INSERT INTO t VALUES (1)"}},
		"query":  {Name: "query", Kind: "postgres", Config: map[string]any{"query": "SELECT 1"}},
		"script": {Name: "script", Kind: "python", Config: map[string]any{"code": "print(1)"}},
	}}
	cases := []struct {
		name string
		pb   *dsl.Playbook
		task *dsl.Task
		want bool
	}{
		{"http GET", nil, http("GET"), false},
		{"http get, lower case and spaces", nil, http(" get "), false},
		{"http HEAD", nil, http("HEAD"), false},
		{"http without method (GET)", nil, http(nil), false},
		{"http empty method (GET)", nil, http(""), false},
		{"http POST", nil, http("POST"), true},
		{"http PUT", nil, http("put"), true},
		{"http DELETE", nil, http("DELETE"), true},
		{"http PATCH", nil, http("PATCH"), true},
		{"http templated method", nil, http("{{ workload.method }}"), true},
		{"http non-string method", nil, http(5), true},

		{"postgres SELECT", nil, pg("query", "SELECT * FROM t WHERE id = 1"), false},
		{"postgres select, lower case, leading space", nil, pg("query", "\n  select count(*) from t"), false},
		{"postgres columns named like keywords", nil, pg("query", "SELECT updated_at, created_by, deleted FROM t"), false},
		{"postgres WITH ... SELECT", nil, pg("query", "WITH x AS (SELECT 1 AS n) SELECT n FROM x"), false},
		{"postgres EXPLAIN / SHOW / VALUES", nil, pg("query", "EXPLAIN SELECT 1; SHOW search_path; VALUES (1)"), false},
		{"postgres several SELECTs", nil, pg("query", "SELECT 1; SELECT 2;"), false},
		{"postgres INSERT", nil, pg("query", "INSERT INTO t VALUES (1)"), true},
		{"postgres WITH ... INSERT", nil, pg("query", "WITH x AS (SELECT 1 AS n) INSERT INTO t SELECT n FROM x"), true},
		{"postgres WITH ... DELETE RETURNING", nil, pg("query", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"), true},
		{"postgres SELECT then UPDATE", nil, pg("query", "SELECT 1; UPDATE t SET a = 1"), true},
		{"postgres SELECT INTO", nil, pg("query", "SELECT * INTO copy FROM t"), true},
		{"postgres SELECT nextval", nil, pg("query", "SELECT nextval('seq')"), true},
		{"postgres SELECT FOR UPDATE", nil, pg("query", "SELECT * FROM t FOR UPDATE"), true},
		{"postgres CREATE TABLE", nil, pg("query", "CREATE TABLE t (a int)"), true},
		{"postgres command key", nil, pg("command", "DELETE FROM t"), true},
		{"postgres sql key", nil, pg("sql", "SELECT 1"), false},
		{"postgres no SQL", nil, &dsl.Task{Name: "t", Kind: "postgres", Config: map[string]any{"auth": "pg"}}, true},
		{"postgres templated SQL", nil, pg("query", "{{ workload.sql }}"), true},

		{"python", nil, kind("python"), true},
		{"playbook", nil, kind("playbook"), true},
		{"shell", nil, kind("shell"), true},
		{"unknown kind", nil, kind("transfer"), true},
		{"noop", nil, kind("noop"), false},
		{"secrets", nil, kind("secrets"), false},
		{"artifact", nil, kind("artifact"), false},
		{"result_fetch", nil, kind("result_fetch"), false},

		{"workbook to a GET", pb, wb("reader", nil), false},
		{"workbook to an INSERT", pb, wb("writer", nil), true},
		{"workbook to a SELECT", pb, wb("query", nil), false},
		{"workbook to python", pb, wb("script", nil), true},
		{"workbook with the call overriding the method", pb, wb("reader", map[string]any{"method": "POST"}), true},
		{"workbook named only by Workbook", pb, &dsl.Task{Name: "t", Kind: "workbook", Workbook: "reader"}, false},
		{"unknown workbook entry", pb, wb("missing", nil), true},
		{"workbook without a playbook", nil, wb("reader", nil), true},

		{"side_effects: false on python", nil, withSpec(kind("python"), false), false},
		{"side_effects: false on a POST", nil, withSpec(http("POST"), false), false},
		{"side_effects: true on noop", nil, withSpec(kind("noop"), true), true},
		{"side_effects: true on a GET", nil, withSpec(http("GET"), true), true},
		{"side_effects not a bool is ignored", nil, withSpec(kind("python"), "false"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SideEffecting(c.pb, c.task); got != c.want {
				t.Fatalf("SideEffecting(%s %v) = %v, want %v", c.task.Kind, c.task.Config, got, c.want)
			}
		})
	}
}

func TestStepSideEffecting(t *testing.T) {
	get := &dsl.Task{Name: "get", Kind: "http", Config: map[string]any{"method": "GET"}}
	post := &dsl.Task{Name: "post", Kind: "http", Config: map[string]any{"method": "POST"}}
	noop := &dsl.Task{Name: "n", Kind: "noop"}
	cases := []struct {
		name  string
		tasks []*dsl.Task
		want  bool
	}{
		{"no tasks", nil, false},
		{"read-only tasks", []*dsl.Task{get, noop}, false},
		{"one side-effecting task", []*dsl.Task{get, post, noop}, true},
	}
	for _, c := range cases {
		if got := StepSideEffecting(nil, &dsl.Step{Name: "s", Tasks: c.tasks}); got != c.want {
			t.Errorf("StepSideEffecting(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
