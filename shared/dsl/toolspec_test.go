package dsl

import (
	"strings"
	"testing"
)

// TestTaskSpecProblems: the validator checks a task against its kind's
// typed spec (shared/toolspec): unknown keys name the kind's keys and the
// nearest spelling, wrong types and values outside an enumeration are
// errors, two spellings of one key are an error, all at the task's line.
func TestTaskSpecProblems(t *testing.T) {
	mk := func(task string) string { return hdr + "  - step: start\n    tool: " + task + "\n" }
	for _, c := range []struct {
		name, task, path, msg string
	}{
		{"nearest spelling", "{kind: postgres, comand: \"select 1\", auth: pg}", "workflow[0].tool.comand",
			`task key "comand" is not read by kind postgres (it reads: as_objects, auth, cmd,`},
		{"nearest spelling hint", "{kind: postgres, comand: \"select 1\", auth: pg}", "workflow[0].tool.comand", `; did you mean "command"?`},
		{"gcs hint", "{kind: gcs, action: list, buckt: b}", "workflow[0].tool.buckt", `; did you mean "bucket"?`},
		{"wrong type", "{kind: postgres, command: {a: 1}}", "workflow[0].tool.command", "postgres command must be a string, got a mapping"},
		{"wrong type alias", "{kind: gcs, action: list, bucket: [a]}", "workflow[0].tool.bucket", "gcs bucket must be a string, got a list"},
		{"wrong bool", "{kind: gcs, action: delete, uri: \"gs://b/o\", missing_ok: maybe}", "workflow[0].tool.missing_ok", "gcs missing_ok must be a boolean"},
		{"gcs enum", "{kind: gcs, action: sync, uri: \"gs://b/o\"}", "workflow[0].tool.action", `gcs action "sync" is not available here (one of upload, put, write, download, get, read, delete, remove, list)`},
		{"two spellings", "{kind: postgres, command: x, auth: a, credential: b}", "workflow[0].tool.credential", "auth and credential are spellings of the same key (auth): keep one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, mk(c.task)).Problems, 7, c.path, c.msg)
		})
	}
}

// TestTaskSpecAccepts: the keys the tools read are accepted (the
// validator and the tools had drifted: postgres credential:, gcs delete
// and list with bucket, object, uri and prefix), and a template is
// checked at run time, not here.
func TestTaskSpecAccepts(t *testing.T) {
	for _, task := range []string{
		"{kind: postgres, credential: pg_local, command: \"select 1\"}",
		"{kind: postgres, auth: pg_local, query: \"select 1\", db_port: \"{{ workload.port }}\"}",
		"{kind: gcs, action: delete, bucket: b, object: o, missing_ok: true}",
		"{kind: gcs, action: delete, uri: \"gs://b/o\"}",
		"{kind: gcs, action: list, bucket: b, prefix: p/}",
		"{kind: gcs, action: list, uri: \"gs://b/p/\"}",
		"{kind: gcs, action: download, source: \"gs://b/o\"}",
		"{kind: gcs, action: upload, data: {a: 1}, destination: \"gs://b/o\", credential: gcs_local}",
		"{kind: gcs, action: \"{{ workload.action }}\", uri: \"gs://b/o\", missing_ok: \"{{ workload.ok }}\"}",
		"{kind: secrets, provider: env, key: NOETL_SECRET_X}",
		"{kind: shell, cmd: \"echo hi\", working_dir: /tmp}",
	} {
		src := hdr + "  - step: start\n    tool: " + task + "\n"
		p, err := Load([]byte(src), "test.yaml")
		if err != nil {
			t.Errorf("%s: %v", task, err)
			continue
		}
		_ = p
	}
}

// TestIgnoredTaskKeyWarns: a key NoETL reads that this engine accepts but
// does not use is a warning naming why.
func TestIgnoredTaskKeyWarns(t *testing.T) {
	p, err := Load([]byte(hdr+"  - step: start\n    tool: {kind: postgres, auth: pg, command: x, pool: {size: 2}}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range p.Warnings {
		if w.Path == "workflow[0].tool.pool" && strings.Contains(w.Message, "postgres pool is accepted but not used: connection pools are sized by the engine") {
			return
		}
	}
	t.Fatalf("no pool warning in %v", p.Warnings)
}

// TestShellExportsWarns: noetl/ops automation playbooks write exports: on a
// shell task; no NoETL shell tool reads it, so it is accepted with a
// warning that says nothing is exported (not refused, not silently kept).
func TestShellExportsWarns(t *testing.T) {
	p, err := Load([]byte(hdr+"  - step: start\n    tool: {kind: shell, cmds: [\"echo OS=linux\"], exports: [os_type]}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range p.Warnings {
		if w.Path == "workflow[0].tool.exports" && strings.Contains(w.Message, "no variable is exported") {
			return
		}
	}
	t.Fatalf("no exports warning in %v", p.Warnings)
}

// TestTaskTimeoutMS: timeout_ms on a task is the task's timeout unless
// its kind reads timeout_ms itself (subscription's poll wait). It used to
// go into every kind's configuration, so a duckdb task with timeout_ms
// passed `noetl validate` and then failed at run time: "key timeout_ms is
// not read by kind duckdb".
func TestTaskTimeoutMS(t *testing.T) {
	for _, c := range []struct {
		task     string
		timeoutS float64
		inConfig bool
	}{
		{"{kind: duckdb, timeout_ms: 3600000, query: \"select 1\"}", 3600, false},
		{"{kind: transfer, timeout_ms: 1500, source: {type: result, ref: x}, target: {type: postgres, auth: pg, table: t}}", 1.5, false},
		{"{kind: python, timeout_ms: 2000, code: \"result = 1\"}", 2, false},
		{"{kind: subscription, source: gcp_pubsub, action: poll, subscription: s, timeout_ms: 500}", 0, true},
	} {
		p, err := Load([]byte(hdr+"  - step: start\n    tool: "+c.task+"\n"), "test.yaml")
		if err != nil {
			t.Errorf("%s: %v", c.task, err)
			continue
		}
		task := p.Workflow[0].Tasks[0]
		_, in := task.Config["timeout_ms"]
		if task.TimeoutS != c.timeoutS || in != c.inConfig {
			t.Errorf("%s: timeout %v s, timeout_ms in the configuration %v; want %v s, %v", c.task, task.TimeoutS, in, c.timeoutS, c.inConfig)
		}
	}
}
