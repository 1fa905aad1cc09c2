package e2e

// The red-team suite of executions against each other through the
// services they share (docs "Security", "Executions are strangers"):
// the side-effect barrier's table in the tasks' PostgreSQL, the runner's
// pooled PostgreSQL sessions, connections through the runner's
// forwarders, the result tier, the stack's NATS, and the engine's own
// stores (output too large for them). Every attack is a playbook
// submitted as an author would; every case checks that the attack ran
// (it found its target, it reused a victim's session, it opened
// connections) and that it was refused, with the refusal's own words.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
)

// sharedPlaybook is the YAML of a playbook of steps.
func sharedPlaybook(t *testing.T, name string, steps ...map[string]any) string {
	t.Helper()
	wf := make([]any, len(steps))
	for i, s := range steps {
		wf[i] = s
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "noetl.io/v2", "kind": "Playbook",
		"metadata": map[string]any{"name": "redteam_shared_" + name, "path": "tests/redteam/shared/" + name}, "workflow": wf})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sharedRun starts a playbook of steps and waits for it; it returns the
// status view (with its execution_id).
func sharedRun(t *testing.T, name string, workload map[string]any, steps ...map[string]any) map[string]any {
	t.Helper()
	id := startInline(t, sharedPlaybook(t, name, steps...), workload)
	st := waitStatus(t, id, 4*time.Minute)
	st["execution_id"] = id
	return st
}

// stepOf returns a step's result and error (kind, message) from a
// status view.
func stepOf(st map[string]any, step string) (result any, kind, msg string) {
	if res, ok := st["results"].(map[string]any); ok {
		result = res[step]
	}
	if steps, ok := st["steps"].(map[string]any); ok {
		if s, ok := steps[step].(map[string]any); ok {
			if e, ok := s["error"].(map[string]any); ok {
				kind, _ = e["kind"].(string)
				msg, _ = e["message"].(string)
			}
		}
	}
	return result, kind, msg
}

// pyTool is a python task with args.
func pyTool(code string, args map[string]any) map[string]any {
	return map[string]any{"kind": "python", "args": args, "code": code}
}

// probeStep is a step named name running tool.
func probeStep(name string, tool map[string]any) map[string]any {
	return map[string]any{"step": name, "tool": tool}
}

// pgTool is a postgres task running sql.
func pgTool(sql string) map[string]any { return map[string]any{"kind": "postgres", "command": sql} }

// pgExec runs statements as the stack's playbook role (test set-up and
// clean-up).
func pgExec(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, os.Getenv("NOETL_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// sqlProbe is a python attacker: it connects to the stack's PostgreSQL
// with psycopg (through its forwarder), finds the side-effect barrier's
// tables (any relation whose name says barrier, outside the system
// schemas) and runs each of stmts ({t} is a table's qualified name),
// reporting per statement and table whether it ran (with its rows) or
// the error's SQLSTATE and text.
const sqlProbe = `
import psycopg
out = {"tables": [], "attempts": {}}
with psycopg.connect(dsn, autocommit=True) as c:
    for q in setup:
        c.execute(q)
    for s, r in c.execute("""SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE (c.relname LIKE '%barrier%' OR n.nspname LIKE '%barrier%') AND c.relkind IN ('r', 'p', 'v')
                               AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_temp%'
                               AND n.nspname NOT LIKE 'rt_%' AND c.relname NOT LIKE 'rt_%'""").fetchall():
        out["tables"].append('"%s"."%s"' % (s, r))
    for t in out["tables"]:
        for name, q in stmts.items():
            k = name + " " + t
            try:
                cur = c.execute(q.replace("{t}", t))
                rows = cur.fetchall() if cur.description else []
                out["attempts"][k] = {"ran": True, "rows": [[str(x) for x in row] for row in rows]}
            except psycopg.Error as e:
                out["attempts"][k] = {"ran": False, "sqlstate": e.sqlstate, "error": str(e).strip()}
result = out
`

// barrierVictim is a side-effecting postgres step that records secret in
// rt_sidefx_victim (the barrier records its attempt).
func barrierVictim(secret string) map[string]any {
	return probeStep("victim", pgTool("INSERT INTO rt_sidefx_victim (v) VALUES ('"+secret+"') RETURNING v"))
}

// The side-effect barrier's rows and table belong to no playbook: a
// playbook's SQL can neither read another execution's barrier records
// nor plant a trigger, rule or policy on the table, alter or empty it,
// nor shadow it through search_path so that a victim's barrier writes
// into the attacker's table.
func TestRedTeamSharedBarrierTable(t *testing.T) {
	RequireStack(t)
	dsn := os.Getenv("NOETL_PG_DSN")
	wl := map[string]any{"pg_dsn": dsn}
	pgExec(t, `CREATE TABLE IF NOT EXISTS rt_sidefx_victim (v text);
CREATE TABLE IF NOT EXISTS rt_spy_log (what text, at timestamptz DEFAULT now());
DELETE FROM rt_spy_log;
CREATE OR REPLACE FUNCTION rt_spy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO public.rt_spy_log (what) VALUES (TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME || ' ' || row_to_json(NEW)::text); RETURN NEW; END $$;`)
	// A first victim makes sure the barrier's table exists.
	secret0 := "rt-barrier-0-" + randSuffix()
	st := sharedRun(t, "victim0", wl, barrierVictim(secret0))
	if st["status"] != "ok" {
		t.Fatalf("victim 0: %v", MustJSON(st["steps"]))
	}
	// The attacker: read every barrier table it can find, plant a
	// trigger, a rule and a policy on it, alter it, empty it.
	stmts := map[string]string{
		"read":     "SELECT * FROM {t}",
		"trigger":  "CREATE TRIGGER rt_spy BEFORE INSERT OR UPDATE ON {t} FOR EACH ROW EXECUTE FUNCTION public.rt_spy()",
		"rule":     "CREATE RULE rt_spy_rule AS ON INSERT TO {t} DO ALSO INSERT INTO public.rt_spy_log (what) VALUES ('rule')",
		"policy":   "CREATE POLICY rt_hide ON {t} USING (false)",
		"rls":      "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY",
		"alter":    "ALTER TABLE {t} ADD COLUMN rt_extra text",
		"truncate": "TRUNCATE {t}",
		"delete":   "DELETE FROM {t}",
	}
	t.Cleanup(func() {
		// On an engine that let the attack through, leave the stack usable.
		for _, tb := range []string{"public.noetl_task_barrier"} {
			pgExec(t, "DROP TRIGGER IF EXISTS rt_spy ON "+tb+"; DROP RULE IF EXISTS rt_spy_rule ON "+tb+"; DROP POLICY IF EXISTS rt_hide ON "+tb+
				"; ALTER TABLE IF EXISTS "+tb+" DISABLE ROW LEVEL SECURITY; ALTER TABLE IF EXISTS "+tb+" DROP COLUMN IF EXISTS rt_extra")
		}
	})
	st = sharedRun(t, "barrier_attacker", nil, probeStep("probe", pyTool(sqlProbe, map[string]any{"dsn": dsn, "stmts": stmts, "setup": []any{}})))
	res, _, msg := stepOf(st, "probe")
	r, _ := res.(map[string]any)
	if r == nil {
		t.Fatalf("attacker: %s %s", st["status"], msg)
	}
	tables, _ := r["tables"].([]any)
	if len(tables) == 0 {
		t.Fatalf("the attacker found no barrier table to attack (positive evidence needed): %v", r)
	}
	t.Logf("the attacker found %v and tried %d statements", tables, len(r["attempts"].(map[string]any)))
	attempts, _ := r["attempts"].(map[string]any)
	for k, v := range attempts {
		a := v.(map[string]any)
		if a["ran"] == true || a["sqlstate"] != "42501" {
			t.Errorf("%s: %v (want refused: insufficient privilege, 42501)", k, MustJSON(a))
		}
	}
	if strings.Contains(MustJSON(r), secret0) {
		t.Errorf("the attacker read victim 0's barrier record: %.400s", MustJSON(r))
	}
	// A victim after the attack: its barrier works and nothing of the
	// attacker's ran in its transaction.
	secret1 := "rt-barrier-1-" + randSuffix()
	st = sharedRun(t, "victim1", wl, barrierVictim(secret1))
	if st["status"] != "ok" {
		t.Errorf("victim 1: %v", MustJSON(st["steps"]))
	}
	if rows := pgQuery(t, "SELECT what FROM rt_spy_log"); len(rows) > 0 {
		t.Errorf("the attacker's trigger or rule ran in a victim's transaction: %v", rows)
	}
	// A second attacker reads again after the victim.
	st = sharedRun(t, "barrier_reader", nil, probeStep("probe", pyTool(sqlProbe, map[string]any{"dsn": dsn, "stmts": map[string]string{"read": "SELECT * FROM {t}",
		"count": "SELECT count(*) FROM {t}"}, "setup": []any{}})))
	res, _, msg = stepOf(st, "probe")
	r, _ = res.(map[string]any)
	if r == nil || len(r["tables"].([]any)) == 0 {
		t.Fatalf("reader: %s %s %v", st["status"], msg, res)
	}
	for k, v := range r["attempts"].(map[string]any) {
		if a := v.(map[string]any); a["ran"] == true || a["sqlstate"] != "42501" {
			t.Errorf("%s: %v (want refused, 42501)", k, MustJSON(a))
		}
	}
	if strings.Contains(MustJSON(r), secret1) {
		t.Errorf("the reader saw victim 1's barrier record")
	}
}

// A same-named table earlier in the search path never receives the
// barrier's records: the schema named after the playbook's role ("$user"
// comes first in PostgreSQL's default search path) and a schema the
// attacker puts first in its role's search path.
func TestRedTeamSharedBarrierShadow(t *testing.T) {
	RequireStack(t)
	dsn := os.Getenv("NOETL_PG_DSN")
	pgExec(t, `CREATE TABLE IF NOT EXISTS rt_sidefx_victim (v text)`)
	// A victim first: the barrier's own table exists.
	if st := sharedRun(t, "shadow_victim0", map[string]any{"pg_dsn": dsn}, barrierVictim("rt-shadow-0")); st["status"] != "ok" {
		t.Fatalf("victim 0: %v", MustJSON(st["steps"]))
	}
	shadow := func(schema string) []any {
		var out []any
		for _, name := range []string{"noetl_task_barrier", "attempts", "barrier"} {
			out = append(out, "CREATE TABLE IF NOT EXISTS "+schema+"."+name+" (key text PRIMARY KEY, result jsonb, mac text, digest text, created_at timestamptz DEFAULT now())")
		}
		return out
	}
	setup := append([]any{"CREATE SCHEMA IF NOT EXISTS noetl", "CREATE SCHEMA IF NOT EXISTS rt_shadow"}, append(shadow("noetl"), shadow("rt_shadow")...)...)
	setup = append(setup, "ALTER ROLE noetl SET search_path = rt_shadow, \"$user\", public")
	t.Cleanup(func() {
		pgExec(t, "ALTER ROLE noetl RESET search_path; DROP SCHEMA IF EXISTS noetl CASCADE; DROP SCHEMA IF EXISTS rt_shadow CASCADE")
	})
	st := sharedRun(t, "shadow_attacker", nil, probeStep("probe", pyTool(sqlProbe, map[string]any{"dsn": dsn, "stmts": map[string]string{}, "setup": setup})))
	if st["status"] != "ok" {
		t.Fatalf("the attacker could not set its shadows up: %v", MustJSON(st["steps"]))
	}
	// Victims on fresh sessions (their own application_name: a pool of
	// their own, whose new connections take the role's search path) and on
	// the pooled ones.
	var wg sync.WaitGroup
	for i, d := range []string{dsn, dsn + "&application_name=rt_shadow_" + randSuffix()} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secret := fmt.Sprintf("rt-shadow-%d-%s", i+1, randSuffix())
			st := sharedRun(t, fmt.Sprintf("shadow_victim%d", i+1), map[string]any{"pg_dsn": d}, barrierVictim(secret))
			if st["status"] != "ok" {
				t.Errorf("victim %d: %v", i+1, MustJSON(st["steps"]))
			}
		}()
	}
	wg.Wait()
	for _, s := range []string{"noetl", "rt_shadow"} {
		for _, name := range []string{"noetl_task_barrier", "attempts", "barrier"} {
			if rows := pgQuery(t, "SELECT count(*) FROM "+s+"."+name); rows[0][0].(int64) != 0 {
				t.Errorf("the barrier wrote %d records into the attacker's %s.%s", rows[0][0], s, name)
			}
		}
	}
}

// poolProbe runs in the runner's pooled PostgreSQL sessions: it reports
// its backend and every piece of session state a previous task could
// have left (temp tables, settings, prepared statements, listeners,
// advisory locks, role).
const poolProbe = `SELECT pg_backend_pid() AS pid,
  (SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relkind = 'r') AS temp_tables,
  (SELECT v FROM rt_pool_real LIMIT 1) AS real_value,
  current_setting('rt.poison', true) AS setting,
  current_setting('search_path') AS search_path,
  current_setting('statement_timeout') AS statement_timeout,
  current_setting('default_transaction_read_only') AS read_only,
  (SELECT count(*) FROM pg_prepared_statements) AS prepared,
  (SELECT count(*) FROM pg_listening_channels()) AS listening,
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory,
  current_user AS role`

// Nothing of one execution's database session reaches another's task:
// the runner's pooled connections come back clean (temp table shadowing a
// real one, session settings, search_path, prepared statement, LISTEN,
// advisory lock).
func TestRedTeamSharedPoolSessions(t *testing.T) {
	RequireStack(t)
	dsn := os.Getenv("NOETL_PG_DSN")
	pgExec(t, `CREATE TABLE IF NOT EXISTS rt_pool_real (v text); DELETE FROM rt_pool_real; INSERT INTO rt_pool_real VALUES ('real');`)
	poison := `SELECT pg_sleep(1.5);
CREATE TEMP TABLE IF NOT EXISTS rt_pool_real (v text); INSERT INTO rt_pool_real VALUES ('poisoned');
SELECT set_config('rt.poison', 'attacker', false);
SET search_path = pg_temp, public;
SET statement_timeout = '77s';
PREPARE rt_poison AS SELECT 'attacker';
LISTEN rt_poison;
SELECT pg_try_advisory_lock(4242 + pg_backend_pid());
SELECT pg_backend_pid() AS pid`
	// Several attackers at once take every pooled connection.
	const n = 5
	attackerPIDs := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := sharedRun(t, fmt.Sprintf("pool_attacker%d", i), map[string]any{"pg_dsn": dsn}, probeStep("probe", pgTool(poison)))
			res, _, msg := stepOf(st, "probe")
			m, _ := res.(map[string]any)
			rows, _ := m["rows"].([]any)
			if st["status"] != "ok" || len(rows) != 1 {
				t.Errorf("attacker %d: %s %s %v", i, st["status"], msg, res)
				return
			}
			mu.Lock()
			attackerPIDs[fmt.Sprint(rows[0].(map[string]any)["pid"])] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(attackerPIDs) == 0 {
		t.Fatal("no attacker ran")
	}
	// Victims of other executions, at once, on the same pool.
	reused := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := sharedRun(t, fmt.Sprintf("pool_victim%d", i), map[string]any{"pg_dsn": dsn}, probeStep("probe", pgTool(poolProbe)))
			res, _, msg := stepOf(st, "probe")
			m, _ := res.(map[string]any)
			rows, _ := m["rows"].([]any)
			if st["status"] != "ok" || len(rows) != 1 {
				t.Errorf("victim %d: %s %s %v", i, st["status"], msg, res)
				return
			}
			row := rows[0].(map[string]any)
			mu.Lock()
			if attackerPIDs[fmt.Sprint(row["pid"])] {
				reused++
			}
			mu.Unlock()
			// A custom setting's value is gone (its name stays defined,
			// empty: PostgreSQL keeps placeholders for the session's life).
			if s := row["setting"]; s != nil && s != "" {
				t.Errorf("victim %d on backend %v: custom setting %q left by another execution's task", i, row["pid"], s)
			}
			want := map[string]any{"temp_tables": int64(0), "real_value": "real", "prepared": int64(0), "listening": int64(0),
				"advisory": int64(0), "role": "noetl", "read_only": "off"}
			for k, w := range want {
				if fmt.Sprint(row[k]) != fmt.Sprint(w) {
					t.Errorf("victim %d on backend %v: %s = %v, want %v (left by another execution's task)", i, row["pid"], k, row[k], w)
				}
			}
			if row["statement_timeout"] == "77s" || strings.HasPrefix(fmt.Sprint(row["search_path"]), "pg_temp") {
				t.Errorf("victim %d: session settings of another execution: statement_timeout %v, search_path %v", i, row["statement_timeout"], row["search_path"])
			}
		}()
	}
	wg.Wait()
	if reused == 0 {
		t.Fatalf("no victim ran on a connection an attacker had used (attackers %v): the case proves nothing", attackerPIDs)
	}
	t.Logf("%d of %d victims ran on an attacker's backend", reused, n)
}

// connProbe opens up to want TCP connections to addr (through the task's
// forwarder) and holds them for hold seconds; for PostgreSQL it completes
// the start-up (psycopg), so a refusal shows as the server's or the
// forwarder's message.
const connProbe = `
import socket, time, psycopg
conns, errors = [], []
for i in range(want):
    try:
        if kind == "pg":
            conns.append(psycopg.connect(dsn, connect_timeout=10))
        else:
            s = socket.create_connection((host, port), timeout=10)
            s.settimeout(5)
            data = s.recv(4096)
            if not data:
                raise ConnectionError("closed by the forwarder")
            if b"quota" in data or b"NOETL_" in data:
                raise ConnectionError(data.decode("utf-8", "replace"))
            conns.append(s)
    except Exception as e:
        errors.append(str(e).strip())
        if len(errors) >= 3:
            break
time.sleep(hold)
result = {"opened": len(conns), "errors": errors}
`

// One task cannot exhaust PostgreSQL's connections through its
// forwarder, nor can one execution with several tasks at once: beyond
// the quotas, connections are refused with the quota's name and setting,
// and a bystander execution connects meanwhile.
func TestRedTeamSharedConnections(t *testing.T) {
	RequireStack(t)
	dsn := os.Getenv("NOETL_PG_DSN")
	var wg sync.WaitGroup
	check := func(what string, st map[string]any, setting string) {
		res, _, msg := stepOf(st, "hog")
		m, _ := res.(map[string]any)
		if m == nil {
			t.Errorf("%s: %s %s", what, st["status"], msg)
			return
		}
		opened := asInt(m["opened"])
		errs := MustJSON(m["errors"])
		if opened == 0 || !strings.Contains(errs, setting) {
			t.Errorf("%s: opened %d connections, errors %.500s; want refused beyond the quota, naming %s", what, opened, errs, setting)
		}
	}
	// Variant 1: one task, PostgreSQL, 120 connections.
	wg.Add(1)
	go func() {
		defer wg.Done()
		st := sharedRun(t, "conn_task", nil, probeStep("hog", pyTool(connProbe, map[string]any{"want": 120, "kind": "pg", "dsn": dsn, "hold": 8})))
		check("one task's PostgreSQL connections", st, "NOETL_RUNNER_TASK_CONNECTIONS")
	}()
	// Variant 2: one execution, three tasks at once (a parallel loop),
	// raw TCP to NATS. Each holds its connections 20 s: under delivery
	// chaos one iteration's start has been seen 4.7 and 8.1 s after the
	// others' (with a hold of 8 s the three then never held theirs at
	// once, and nothing was refused).
	host, port := splitHP(strings.TrimPrefix(os.Getenv("NATS_URL"), "nats://"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		st := sharedRun(t, "conn_exec", nil, map[string]any{"step": "hog",
			"loop": map[string]any{"in": []any{1, 2, 3}, "iterator": "i", "spec": map[string]any{"mode": "parallel", "max_in_flight": 3}},
			"tool": pyTool(connProbe, map[string]any{"want": 15, "kind": "tcp", "host": host, "port": port, "hold": 20, "dsn": ""})})
		res, _, msg := stepOf(st, "hog")
		all := MustJSON(res)
		if !strings.Contains(all, "NOETL_RUNNER_EXECUTION_CONNECTIONS") {
			t.Errorf("one execution's connections: %s %s %.800s; want refused beyond the execution's quota, naming NOETL_RUNNER_EXECUTION_CONNECTIONS", st["status"], msg, all)
		}
	}()
	// Meanwhile a bystander connects.
	time.Sleep(4 * time.Second)
	st := sharedRun(t, "conn_bystander", nil, probeStep("hog", pyTool(connProbe, map[string]any{"want": 2, "kind": "pg", "dsn": dsn, "hold": 0})))
	res, _, msg := stepOf(st, "hog")
	if m, _ := res.(map[string]any); m == nil || asInt(m["opened"]) != 2 {
		t.Errorf("a bystander beside the hogs: %s %s %v", st["status"], msg, res)
	}
	wg.Wait()
}

// Output too large for the engine's stores fails its task once, at once,
// with the text cut to a documented size and a marker; it never wedges
// the execution or makes Cloud Tasks deliver the unit again.
func TestRedTeamSharedOversizeOutput(t *testing.T) {
	RequireStack(t)
	cases := []struct {
		name, code string
		kind       string // the step's error kind ("" : the step succeeds)
		loop       int    // iterations of a parallel loop (0: none); each at most one attempt
	}{
		{"exception", "raise Exception('x' * (12 << 20))", "python", 0},
		{"exception_type", "raise type('E' * (2 << 20), (Exception,), {})('boom')", "python", 0},
		{"print", "import sys\nfor _ in range(40):\n    sys.stdout.write('p' * (1 << 20))\nresult = 1", "", 0},
		{"result_key", "result = {'k' * (3 << 20): 1}", "", 0},
		// Iterations' failures travel in loop.iteration.failed events.
		{"loop_exceptions", "raise Exception('i' * (4 << 20))", "python", 3},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			step := probeStep("probe", pyTool(c.code, nil))
			if c.loop > 0 {
				items := make([]any, c.loop)
				for i := range items {
					items[i] = i
				}
				step["loop"] = map[string]any{"in": items, "iterator": "i", "spec": map[string]any{"mode": "parallel", "max_in_flight": c.loop}}
			}
			id := startInline(t, sharedPlaybook(t, "oversize_"+c.name, step), nil)
			st := waitStatus(t, id, 3*time.Minute)
			took := time.Since(t0)
			_, kind, msg := stepOf(st, "probe")
			evs := Events(t, id)
			attempts := Count(evs, "task.attempt.failed", "probe") + Count(evs, "task.attempt.done", "probe")
			t.Logf("%s: %s in %s, %d attempt(s), error %s %.200q (%d bytes)", c.name, st["status"], took.Round(time.Millisecond), attempts, kind, msg, len(msg))
			switch {
			case c.loop == 0 && attempts != 1:
				t.Errorf("%s: %d attempts, want exactly 1 (no redelivery)", c.name, attempts)
			case c.loop > 0:
				// Under fail_fast the first failed iteration fails the
				// step, so an iteration still waiting for its delivery
				// (delivery chaos delays it) never starts: between 1 and
				// c.loop attempts, and never two of one iteration.
				per := map[string]int{}
				for _, e := range evs {
					if (e["event_type"] == "task.attempt.failed" || e["event_type"] == "task.attempt.done") && e["step"] == "probe" {
						per[fmt.Sprint(e["iteration"])]++
					}
				}
				for it, n := range per {
					if n > 1 {
						t.Errorf("%s: iteration %s made %d attempts, want 1 (no redelivery)", c.name, it, n)
					}
				}
				if attempts < 1 || attempts > c.loop {
					t.Errorf("%s: %d attempts, want 1..%d", c.name, attempts, c.loop)
				}
			}
			for _, e := range evs {
				if b := len(MustJSON(e)); b > 64<<10 {
					t.Errorf("%s: a %s event of %d bytes", c.name, e["event_type"], b)
				}
			}
			if c.name == "exception" && !strings.Contains(msg, "the full text is stored as noetl://") {
				t.Errorf("%s: the cut message does not say where its full text is: %q", c.name, msg[max(0, len(msg)-300):])
			}
			if len(msg) > 16<<10 {
				t.Errorf("%s: an error message of %d bytes reached the execution's state", c.name, len(msg))
			}
			switch {
			case c.kind != "" && (st["status"] != "failed" || kind != c.kind || !strings.Contains(msg, "truncated")):
				t.Errorf("%s: %s, error %s %.200q; want failed with kind %s and a truncation marker", c.name, st["status"], kind, msg, c.kind)
			case c.kind == "" && st["status"] != "ok":
				t.Errorf("%s: %s %s %.300q, want ok", c.name, st["status"], kind, msg)
			}
		}()
	}
	wg.Wait()
}

// natsProbe speaks NATS's client protocol over a raw socket (through the
// task's forwarder): it connects with user/password (none when user is
// empty) and, when park is set, creates a file stream without a size
// bound and publishes messages of 900 KiB to it until the server
// refuses one or want are stored, reporting the server's answers.
const natsProbe = `
import json, socket
s = socket.create_connection((host, port), timeout=20)
f = s.makefile("rb")
out = {"info": f.readline().decode()[:4], "stored": 0, "answers": []}
c = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True}
if user:
    c["user"], c["pass"] = user, password
s.sendall(b"CONNECT " + json.dumps(c).encode() + b"\r\nPING\r\n")
def line():
    l = f.readline().decode().strip()
    while l == "PING" or l.startswith("INFO"):
        if l == "PING":
            s.sendall(b"PONG\r\n")
        l = f.readline().decode().strip()
    return l
out["connect"] = line()
def request(subject, payload):
    s.sendall(b"PUB %s _INBOX.rt %d\r\n" % (subject.encode(), len(payload)) + payload + b"\r\n")
    l = line()
    if not l.startswith("MSG"):
        return l
    n = int(l.split()[-1])
    body = f.read(n + 2)[:n]
    return body.decode()
if park and out["connect"] == "PONG":
    s.sendall(b"SUB _INBOX.rt 1\r\n")
    out["answers"].append(request("$JS.API.STREAM.CREATE." + park, json.dumps({"name": park, "subjects": [park + ".>"], "storage": "file"}).encode()))
    data = b"x" * (900 << 10)
    for i in range(want):
        a = request(park + ".m", data)
        if '"error"' in a or a.startswith("-ERR"):
            out["answers"].append(a)
            break
        out["stored"] += 1
result = out
`

// The stack's NATS is reached only with the credential tasks are granted
// (no user, a guessed one, or the credentials of engines before it are
// refused), and what tasks park in its JetStream is bounded by their
// account's storage (NOETL_NATS_TASK_STORE_MB): a raw client publishing
// to a stream of its own without a size bound, and the nats kind storing
// key-value entries, are refused by the server at the account's limit
// (the kind with kind limit and the setting's name), and the bucket of
// another account (the operators') is out of reach.
func TestRedTeamSharedNATS(t *testing.T) {
	RequireStack(t)
	host, port := splitHP(strings.TrimPrefix(os.Getenv("NATS_URL"), "nats://"))
	user, pass := os.Getenv("NOETL_NATS_TASK_USER"), os.Getenv("NOETL_NATS_TASK_PASSWORD")
	if user == "" || pass == "" {
		t.Fatal("NOETL_NATS_TASK_USER and NOETL_NATS_TASK_PASSWORD are not in the stack's environment")
	}
	park := "RTPARK" + randSuffix()[10:]
	bucket := "rtpark" + randSuffix()[10:]
	t.Cleanup(func() { natsCleanup(t, user, pass, park, "KV_"+bucket) })
	// Without the credential.
	for name, cred := range map[string][2]string{"no user": {"", ""}, "guessed": {"noetl", "noetl"}, "the task user, a guessed password": {user, "noetl"}} {
		st := sharedRun(t, "nats_"+slug(name), nil, probeStep("probe", pyTool(natsProbe, map[string]any{"host": host, "port": port, "user": cred[0], "password": cred[1], "park": "", "want": 0})))
		res, _, msg := stepOf(st, "probe")
		r, _ := res.(map[string]any)
		if r == nil || r["info"] != "INFO" || !strings.Contains(fmt.Sprint(r["connect"]), "Authorization Violation") {
			t.Errorf("NATS with %s: %s %s %v; want -ERR 'Authorization Violation'", name, st["status"], msg, res)
		}
	}
	// With it: parking is bounded by the account's storage.
	st := sharedRun(t, "nats_park", nil, probeStep("probe", pyTool(natsProbe, map[string]any{"host": host, "port": port, "user": user, "password": pass, "park": park, "want": 200})))
	res, _, msg := stepOf(st, "probe")
	r, _ := res.(map[string]any)
	if r == nil || r["connect"] != "PONG" {
		t.Fatalf("NATS with the task's credential: %s %s %v", st["status"], msg, res)
	}
	answers := MustJSON(r["answers"])
	stored := asInt(r["stored"])
	if stored == 0 || stored*900<<10 > 64<<20 || !strings.Contains(answers, "resource limits exceeded") && !strings.Contains(answers, "insufficient resources") {
		t.Errorf("a raw client parked %d × 900 KiB (answers %.400s); want refused at the account's 64 MiB", stored, answers)
	}
	t.Logf("raw client: %d × 900 KiB stored, then %.200s", stored, answers)
	// The nats kind (a granted credential) is refused at the same limit,
	// with kind limit naming the setting: the account is already full.
	cred := "rt_nats_" + randSuffix()
	code, body := apiDo(t, http.MethodPost, "/credentials", map[string]any{"name": cred, "kind": "nats", "grants": []string{"inline:token"},
		"data": map[string]any{"nats_url": os.Getenv("NATS_URL"), "nats_user": user, "nats_password": pass}})
	if code/100 != 2 {
		t.Fatalf("register the credential: %d %v", code, body)
	}
	t.Cleanup(func() { apiDo(t, http.MethodDelete, "/credentials/"+cred, nil) })
	st = sharedRun(t, "nats_kv", nil, probeStep("probe", map[string]any{"kind": "nats", "auth": cred, "operation": "kv_put", "bucket": bucket, "key": "k",
		"value": "{{ 'x' * 900000 }}"}))
	_, kind, msg := stepOf(st, "probe")
	if st["status"] != "failed" || kind != "limit" || !strings.Contains(msg, "NOETL_NATS_TASK_STORE_MB") {
		t.Errorf("the nats kind on a full account: %s %s %q; want kind limit naming NOETL_NATS_TASK_STORE_MB", st["status"], kind, msg)
	}
}

// natsCleanup deletes the streams a test parked in the tasks' account.
func natsCleanup(t *testing.T, user, pass string, streams ...string) {
	nc, err := nats.Connect(os.Getenv("NATS_URL"), nats.UserInfo(user, pass))
	if err != nil {
		t.Logf("nats cleanup: %v", err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, s := range streams {
		_ = js.DeleteStream(ctx, s)
	}
}

// One task attempt cannot fill the result tier: its write grant signs a
// length range (NOETL_RESULT_MAX_OBJECT_MB; the stack's quota), a duckdb
// task streaming a table beyond it fails with kind limit naming the
// setting, and the stack's results gateway refuses a body over a
// grant's range, and a write grant that signs none, whoever holds them.
func TestRedTeamSharedResultBytes(t *testing.T) {
	RequireStack(t)
	quota, _ := strconv.Atoi(os.Getenv("NOETL_RESULT_MAX_OBJECT_MB"))
	if quota <= 0 || quota > 1024 {
		t.Fatalf("the stack's NOETL_RESULT_MAX_OBJECT_MB is %q: this case writes past it (the stack sets 64)", os.Getenv("NOETL_RESULT_MAX_OBJECT_MB"))
	}
	t0 := time.Now()
	st := sharedRun(t, "result_bytes", nil, probeStep("probe", map[string]any{"kind": "duckdb", "timeout": 240,
		"query": fmt.Sprintf("SELECT i, repeat('x', 1048576) AS v FROM range(%d) t(i)", quota+64)}))
	_, kind, msg := stepOf(st, "probe")
	t.Logf("a table of %d MiB: %s in %s, %s %.300q", quota+64, st["status"], time.Since(t0).Round(time.Millisecond), kind, msg)
	if st["status"] != "failed" || kind != "limit" || !strings.Contains(msg, "NOETL_RESULT_MAX_OBJECT_MB") {
		t.Errorf("a table over the quota: %s %s %q; want kind limit naming NOETL_RESULT_MAX_OBJECT_MB", st["status"], kind, msg)
	}
	// The gateway itself: a grant as execute signs it, used past its
	// range; a PUT signed without one.
	u, err := url.Parse(os.Getenv("NOETL_RESULTS_SIGNED_ENDPOINT"))
	if err != nil || u.Host == "" {
		t.Fatalf("NOETL_RESULTS_SIGNED_ENDPOINT %q", os.Getenv("NOETL_RESULTS_SIGNED_ENDPOINT"))
	}
	signer, err := grant.NewKeySigner(os.Getenv("NOETL_RESULTS_SIGNING_KEY_FILE"), os.Getenv("NOETL_RUNNER_INVOKER"), u.Host, u.Scheme == "http")
	if err != nil {
		t.Fatal(err)
	}
	bucket, key := os.Getenv("NOETL_RESULTS_BUCKET"), "noetl/redteam/bytes-"+randSuffix()
	g, err := signer.Write(context.Background(), bucket, key, results.ObjectAttrs{ContentType: "application/json"}, 1024, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	put := func(u string, h map[string]string, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, u, strings.NewReader(body))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := Anonymous.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := put(g.URL, g.Headers, strings.Repeat("y", 4096)); code != 400 || !strings.Contains(body, "EntityTooLarge") {
		t.Errorf("a body over the grant's range: %d %s", code, body)
	}
	// A PUT the stack's key signs the way engines before the quota did:
	// without a length range.
	unbounded, err := storage.SignedURL(bucket, key, &storage.SignedURLOptions{GoogleAccessID: os.Getenv("NOETL_RUNNER_INVOKER"), SignBytes: signer.SignBytes,
		Method: http.MethodPut, Expires: time.Now().Add(time.Minute), Scheme: storage.SigningSchemeV4, Style: storage.PathStyle(), Hostname: u.Host, Insecure: u.Scheme == "http"})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := put(unbounded, nil, "z"); code != 403 || !strings.Contains(body, grant.ContentLengthRangeHeader) {
		t.Errorf("a PUT signed without a length range: %d %s", code, body)
	}
	if code, body := put(g.URL, g.Headers, strings.Repeat("y", 1024)); code != 200 {
		t.Errorf("a body within the range: %d %s", code, body)
	}
}
