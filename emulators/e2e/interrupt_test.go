package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A cancel reaches running work (docs/resilience.md; NoETL observability
// spec §8.5): a 60-second python, SQL (PostgreSQL and DuckDB) and shell
// task each ends within 2 s of the cancel's acceptance (the api's 202),
// measured three ways:
//
//   - the work itself is gone: no process of the task's tree is left
//     (python and the `sleep` it started, the shell's `sleep`, the
//     sandboxed DuckDB worker that was counting), or PostgreSQL no longer
//     runs the statement (pg_stat_activity);
//   - the runner's attempt ended (its "runner: attempt" log line, written
//     when the kind returned: DuckDB's query interrupted);
//   - the control plane recorded the attempt's end (task.canceled).
//
// The execution's log shows the attempt as canceled — task.attempt.failed
// with status canceled and kind canceled, then task.canceled — with one
// attempt (no retry). Every figure is logged (go test -v) for the record.
func TestCancelInterruptsRunningTasks(t *testing.T) {
	RequireStack(t)
	const bound = 2 * time.Second // the behaviour documented, not a margin
	for _, tc := range []struct {
		kind string
		// tool is the task (YAML flow mapping) with %[1]s for the nonce.
		tool string
		// running reports whether the task's work still runs.
		running func(t *testing.T, nonce string) bool
	}{
		{"python", `{kind: python, timeout: 120, code: "import subprocess\nsubprocess.run(['sleep', '60.%[1]s'])\nresult = 1"}`, processRuns},
		{"shell", `{kind: shell, timeout: 120, command: "sleep 60.%[1]s; echo done"}`, processRuns},
		{"postgres", `{kind: postgres, timeout: 120, connection: "{{ workload.pg_dsn }}", command: "SELECT pg_sleep(60) /* %[1]s */"}`, statementRuns},
		{"duckdb", `{kind: duckdb, timeout: 120, query: "SELECT count(*) AS n FROM range(100000000000000) t(i) WHERE i %% 7 = 3 /* %[1]s */"}`, (&duckdbWorker{}).running},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			nonce := fmt.Sprintf("%09d", time.Now().UnixNano()%1e9)
			src := fmt.Sprintf("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: interrupt_%s}\nworkflow:\n  - step: long\n    tool: %s\n", tc.kind, fmt.Sprintf(tc.tool, nonce))
			id := startInline(t, src, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN")})
			// Positive evidence that the work runs before the cancel.
			deadline := time.Now().Add(90 * time.Second)
			for {
				if tc.running(t, nonce) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the %s task never ran (status %v)", tc.kind, waitOrStatus(t, id))
				}
				time.Sleep(50 * time.Millisecond)
			}
			code, m := apiDo(t, http.MethodPost, "/executions/"+id+"/cancel", map[string]any{"reason": "interrupt test"})
			accepted := time.Now()
			if code != http.StatusAccepted {
				t.Fatalf("cancel: %d %v", code, m)
			}
			for tc.running(t, nonce) {
				if time.Since(accepted) > time.Minute {
					t.Fatalf("the %s task's work still runs a minute after the cancel", tc.kind)
				}
				time.Sleep(10 * time.Millisecond)
			}
			gone := time.Since(accepted)
			runnerEnd := runnerAttemptEnd(t, id, time.Minute)
			var canceledAt time.Time
			for {
				evs := fetchEvents(t, id)
				for _, e := range evs {
					if e["event_type"] == "task.canceled" && e["step"] == "long" {
						canceledAt = evTime(t, e)
					}
				}
				if !canceledAt.IsZero() {
					if n := Count(evs, "task.attempt.started", "long"); n != 1 {
						t.Fatalf("%d attempts started, want 1 (no retry)", n)
					}
					var failed map[string]any
					for _, e := range evs {
						if e["event_type"] == "task.attempt.failed" && e["step"] == "long" {
							failed = e
						}
					}
					p, _ := failed["payload"].(map[string]any)
					em, _ := p["error"].(map[string]any)
					if failed == nil || failed["status"] != "canceled" || em["kind"] != "canceled" {
						t.Fatalf("task.attempt.failed %v, want status canceled and error kind canceled", failed)
					}
					break
				}
				if time.Since(accepted) > time.Minute {
					t.Fatalf("no task.canceled event a minute after the cancel: %s", MustJSON(evs))
				}
				time.Sleep(100 * time.Millisecond)
			}
			if st := waitStatus(t, id, 10*time.Second); st["status"] != "canceled" {
				t.Fatalf("execution %v, want canceled", st["status"])
			}
			t.Logf("%s: cancel accepted → work gone %v, → runner attempt ended %v, → task.canceled recorded %v",
				tc.kind, gone.Round(time.Millisecond), runnerEnd.Sub(accepted).Round(time.Millisecond), canceledAt.Sub(accepted).Round(time.Millisecond))
			for what, d := range map[string]time.Duration{"its work to be gone": gone, "the runner's attempt to end": runnerEnd.Sub(accepted), "task.canceled": canceledAt.Sub(accepted)} {
				if d > bound {
					t.Errorf("%s: %v from the cancel's acceptance to %s, over %v", tc.kind, d, what, bound)
				}
			}
		})
	}
}

// waitOrStatus returns an execution's status (for messages).
func waitOrStatus(t *testing.T, id string) any {
	_, m := apiDo(t, http.MethodGet, "/executions/"+id, nil)
	return m["status"]
}

// processRuns reports whether a process whose command line holds nonce
// runs on the machine (the task's own, in the runner's sandbox).
func processRuns(t *testing.T, nonce string) bool {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(nonce)) {
			return true
		}
	}
	return false
}

// duckdbWorker follows the sandboxed DuckDB worker of one task: a
// process running the runner's executable (the sandbox helper serving
// the duckdb-worker program) under a task uid of the runner's range.
// Warm workers idle beside it; the task's one is the one that counts.
type duckdbWorker struct{ pids []int }

// running reports, before the worker was found, whether a worker uses
// more than a quarter of a core over 200 ms (and remembers it); after,
// whether that worker process still exists (a zombie counts as gone).
func (w *duckdbWorker) running(t *testing.T, _ string) bool {
	t.Helper()
	if w.pids == nil {
		a := workerTicks(t)
		time.Sleep(200 * time.Millisecond)
		for pid, n := range workerTicks(t) {
			if n-a[pid] > 5 { // ticks of 10 ms: > 50 ms of CPU in 200 ms
				w.pids = append(w.pids, pid)
			}
		}
		if len(w.pids) > 0 {
			t.Logf("duckdb: the task's sandboxed worker is pid %v", w.pids)
		}
		return len(w.pids) > 0
	}
	now := workerTicks(t)
	for _, pid := range w.pids {
		if _, ok := now[pid]; ok {
			return true
		}
	}
	return false
}

// workerTicks returns the CPU ticks (user + system) of every live
// process that runs the stack's runner executable under a uid of the
// runner's range other than the runner's own: the sandboxed workers.
func workerTicks(t *testing.T) map[int]int64 {
	t.Helper()
	exe := filepath.Join(os.Getenv("NOETL_STACK_DIR"), "bin", "runner")
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	base := -1
	for _, d := range dirs {
		if p, _ := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); p == exe {
			if u := uidOf(d.Name()); base < 0 || u < base {
				base = u
			}
		}
	}
	if base < 0 {
		t.Fatalf("no process runs %s", exe)
	}
	out := map[int]int64{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if p, _ := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); p != exe {
			continue
		}
		if u := uidOf(d.Name()); u <= base || u >= base+65536 {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields from the state on
		if len(f) > 12 && f[0] != "Z" {
			u, _ := strconv.ParseInt(f[11], 10, 64) // utime (field 14)
			k, _ := strconv.ParseInt(f[12], 10, 64) // stime (field 15)
			out[pid] = u + k
		}
	}
	return out
}

// uidOf returns the real uid of process pid, or -1.
func uidOf(pid string) int {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

// statementRuns reports whether the stack's PostgreSQL runs a statement
// holding nonce.
func statementRuns(t *testing.T, nonce string) bool {
	t.Helper()
	c := pgConn(t)
	defer c.Close(context.Background())
	return pgCount(t, c, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'", nonce) > 0
}

// runnerAttemptEnd returns when the runner logged the end of execution
// id's attempt (its "runner: attempt" line), waiting up to timeout.
func runnerAttemptEnd(t *testing.T, id string, timeout time.Duration) time.Time {
	t.Helper()
	path := filepath.Join(os.Getenv("NOETL_STACK_DIR"), "logs", "runner.log")
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("the runner's log: %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.Contains(line, []byte(id)) || !bytes.Contains(line, []byte(`"runner: attempt"`)) {
				continue
			}
			var rec struct {
				Time        time.Time `json:"time"`
				ExecutionID string    `json:"execution_id"`
				OK          bool      `json:"ok"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.ExecutionID == id {
				f.Close()
				if rec.OK {
					t.Fatalf("the runner's attempt of %s ended ok: %s", id, line)
				}
				return rec.Time
			}
		}
		f.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the runner logged no end of %s's attempt within %v", id, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// `noetl step complete` and `noetl step fail` on the stack (runbook B):
// an admin ends a stuck step run — a python task that would sleep for
// five minutes — through the engine; the next step reads the result given
// by hand, the log holds step.forced (the admin's identity and reason)
// and the interrupted task's task.canceled; an operator (below admin) is
// refused with 403 and changes nothing.
func TestStepCompleteByHand(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: stuck_step}
workflow:
  - step: stuck
    tool: {kind: python, timeout: 600, code: "import time\ntime.sleep(300)\nresult = {'value': 0}"}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop, result: {got: "{{ stuck.value }}"}}
`
	for _, action := range []string{"complete", "fail"} {
		t.Run(action, func(t *testing.T) {
			id := startInline(t, src, nil)
			deadline := time.Now().Add(90 * time.Second)
			for {
				_, st := apiDo(t, http.MethodGet, "/executions/"+id, nil)
				if strings.Contains(MustJSON(st["steps"]), `"running"`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("stuck never ran: %v", st)
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Second) // the python task is well under way
			oscar := identity(t, "operator", "oscar", false)
			oscar.expect(t, "POST", "/api/executions/"+id+"/steps/stuck/"+action, map[string]any{"reason": "no"}, 403, "has role operator")
			if r := noetlCLI(t, "step", "complete", id, "nope", "--result", "1"); r.code != 3 {
				t.Fatalf("step complete of an unknown step: exit %d %s", r.code, r.stderr)
			}
			args := []string{"step", action, id, "stuck", "--reason", "done by hand in the e2e test", "-o", "table"}
			if action == "complete" {
				args = append(args, "--result", `{"value": 42}`)
			}
			r := noetlCLI(t, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "step stuck run 1") {
				t.Fatalf("noetl %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
			st := waitStatus(t, id, 60*time.Second)
			evs := Events(t, id)
			var forced map[string]any
			for _, e := range evs {
				if e["event_type"] == "step.forced" {
					forced = e
				}
			}
			p, _ := forced["payload"].(map[string]any)
			if forced == nil || forced["step"] != "stuck" || p["action"] != action || p["principal"] != "token" || p["reason"] != "done by hand in the e2e test" {
				t.Fatalf("step.forced %v", forced)
			}
			if Count(evs, "task.canceled", "stuck") != 1 {
				t.Fatal("the stuck python task was not interrupted (no task.canceled)")
			}
			switch action {
			case "complete":
				res := MustJSON(st["result"])
				if st["status"] != "ok" || !strings.Contains(res, `"got":42`) && !strings.Contains(res, `"got": 42`) {
					t.Fatalf("execution %v with result %s, want ok with after's got 42", st["status"], res)
				}
			case "fail":
				if st["status"] != "failed" || Count(evs, "step.failed", "stuck") != 1 || Count(evs, "step.started", "after") != 0 {
					t.Fatalf("execution %v, want failed at stuck without after", st["status"])
				}
			}
			if r := noetlCLI(t, args...); r.code != 2 {
				t.Fatalf("a second %s: exit %d, want 2 (409: the execution ended)\n%s", action, r.code, r.stderr)
			}
		})
	}
}
