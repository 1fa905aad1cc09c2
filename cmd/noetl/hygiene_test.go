package main

import (
	"encoding/json"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
)

// Shell completion for bash, zsh and fish (cobra's): the scripts, the
// dynamic completion of commands, and of execution ids from the api.
func TestCompletion(t *testing.T) {
	f := newFake(t)
	for shell, want := range map[string]string{"bash": "__start_noetl", "zsh": "#compdef noetl", "fish": "complete -c noetl"} {
		if r := f.cli("completion", shell); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, lacks %q", shell, r.code, want)
		}
	}
	r := f.cli("__complete", "d")
	if r.code != 0 || !strings.Contains(r.stdout, "describe\t") || !strings.Contains(r.stdout, "dlq\t") || strings.Contains(r.stdout, "validate") {
		t.Errorf("__complete d: %+v", r)
	}
	f.reply("GET /executions", 200, map[string]any{"executions": []any{
		map[string]any{"execution_id": "914", "status": "ok", "playbook": "examples/routing"},
		map[string]any{"execution_id": "915", "status": "failed", "playbook": "tests/x"},
		map[string]any{"execution_id": "800", "status": "ok", "playbook": "y"},
	}})
	r = f.cli("__complete", "describe", "91")
	if r.code != 0 || !strings.Contains(r.stdout, "914\tok examples/routing\n915\tfailed tests/x\n") || strings.Contains(r.stdout, "800") {
		t.Errorf("__complete describe 91: %+v", r)
	}
	if r := f.cli("__complete", "cancel", "914", ""); strings.Contains(r.stdout, "915") {
		t.Errorf("cancel completes a second id: %q", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	for _, c := range []struct {
		bi   debug.BuildInfo
		rev  string
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "73ae2c9f01234567890abcdef"}, {Key: "vcs.time", Value: "2026-11-28T03:40:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"", "73ae2c9f0123 (2026-11-28T03:40:00Z, go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "73ae2c9f01234567890abcdef"}, {Key: "vcs.modified", Value: "true"}}},
			"", "73ae2c9f0123-dirty (go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "", "v1.2.3 (go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "bff0ed6a1b2c-dirty", "bff0ed6a1b2c-dirty (go1.26.8)"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "devel"},
	} {
		if got := versionOf(&c.bi, c.rev); got != c.want {
			t.Errorf("versionOf = %q, want %q", got, c.want)
		}
	}
	a, so, se := testApp(nil)
	if r := execApp(a, so, se, "--version"); r.code != 0 || r.stdout != "noetl "+version()+"\n" || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("--version: %+v", r)
	}
}

// validate and lint read "-" from stdin; -o json prints one object;
// "ok (1 step)"; lint lines without a code end without "[]".
func TestValidateStdinJSONAndWording(t *testing.T) {
	one := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: one}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n"
	bad := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    tool: {kind: nosuchkind}\n"
	good := writeFile(t, "good.yaml", validPlaybook)
	stdin := func(in string, args ...string) result {
		a, so, se := testApp(nil)
		a.stdin = strings.NewReader(in)
		return execApp(a, so, se, args...)
	}
	if r := stdin(one, "validate", "-"); r.code != 0 || r.stdout != "<stdin>: ok (1 step)\n" {
		t.Errorf("validate - (one step): %+v", r)
	}
	if r := stdin(bad, "validate", "-"); r.code != ExitInvalid || !strings.Contains(r.stderr, "<stdin>:6:") {
		t.Errorf("validate - (bad): %+v", r)
	}
	if r := stdin(one, "validate", "-", "-"); r.code != ExitInvalid || !strings.Contains(r.stderr, "can be given once") {
		t.Errorf("validate - -: %+v", r)
	}
	r := stdin(bad, "validate", good, "-", "-o", "json")
	var out struct {
		Files []struct {
			File     string `json:"file"`
			Kind     string `json:"kind"`
			Valid    bool   `json:"valid"`
			Steps    *int   `json:"steps"`
			Problems []struct {
				Line    int    `json:"line"`
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"problems"`
		} `json:"files"`
		Valid, Total int
	}
	if r.code != ExitInvalid || r.stderr != "" || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Valid != 1 || out.Total != 2 || len(out.Files) != 2 {
		t.Fatalf("validate -o json: %+v", r)
	}
	if g := out.Files[0]; g.File != good || !g.Valid || g.Kind != "playbook" || g.Steps == nil || *g.Steps != 2 || len(g.Problems) != 0 {
		t.Errorf("good file: %+v", g)
	}
	if b := out.Files[1]; b.File != "<stdin>" || b.Valid || len(b.Problems) == 0 || b.Problems[0].Line != 6 || !strings.Contains(b.Problems[0].Message, "nosuchkind") {
		t.Errorf("bad file: %+v", b)
	}
	// Without -o, validate keeps its text whatever stdout is (scripts/run
	// reads its problems on stderr).
	if r := stdin(bad, "validate", "-"); strings.HasPrefix(r.stdout, "{") {
		t.Errorf("validate into a pipe printed JSON: %+v", r)
	}
	// lint: a legacy form's warning has no code, a finding has one.
	legacy := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: l}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n    next: end\n  - step: end\n    tool: {kind: noop}\n  - step: orphan\n    tool: {kind: noop}\n"
	r = stdin(legacy, "lint", "-")
	if r.code != 0 || strings.Contains(r.stdout, "[]") || !strings.Contains(r.stdout, "] \n") && !strings.Contains(r.stdout, "]\n") {
		t.Errorf("lint -: %+v", r)
	}
	coded, uncoded := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		switch {
		case strings.HasSuffix(line, "finding(s)"):
		case strings.HasSuffix(line, "]"):
			coded++
		default:
			uncoded++
		}
	}
	if coded == 0 || uncoded == 0 {
		t.Errorf("lint: %d findings with a code, %d without; want both:\n%s", coded, uncoded, r.stdout)
	}
	r = stdin(legacy, "lint", "-", "-o", "json")
	var lint struct {
		Files []struct {
			Findings []struct {
				Code string `json:"code"`
			} `json:"findings"`
		} `json:"files"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &lint) != nil || len(lint.Files) != 1 || len(lint.Files[0].Findings) != coded+uncoded {
		t.Errorf("lint -o json: %+v", r)
	}
}

// cancel --reason sends the reason the api records in the cancellation
// event; without it the body is empty.
func TestCancelReason(t *testing.T) {
	f := newFake(t)
	f.reply("POST /executions/e1/cancel", 202, map[string]any{"status": "canceled"})
	if r := f.cli("cancel", "e1", "--reason", "wrong input", "-o", "table"); r.code != 0 || r.stdout != "execution e1: canceled\n" {
		t.Errorf("cancel --reason: %+v", r)
	}
	if r := f.cli("cancel", "e1"); r.code != 0 {
		t.Errorf("cancel: %+v", r)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].Body["reason"] != "wrong input" || reqs[1].Body != nil {
		t.Errorf("cancel bodies: %+v", reqs)
	}
}

// list --before pages on; a full page tells how to list the next one.
func TestListBefore(t *testing.T) {
	f := newFake(t)
	page := func(n int) []any {
		var out []any
		for i := 0; i < n; i++ {
			out = append(out, map[string]any{"execution_id": "e" + string(rune('a'+i)), "status": "ok", "playbook": "p", "created_at": "2026-11-28T03:0" + string(rune('9'-i)) + ":00.5Z"})
		}
		return out
	}
	f.reply("GET /executions", 200, map[string]any{"executions": page(2)})
	r := f.cli("list", "--limit", "2", "--status", "ok", "-o", "table")
	if r.code != 0 || !strings.Contains(r.stderr, "more: scripts/noetl list --status ok --limit 2 --before '2026-11-28T03:08:00.5Z,eb'\n") {
		t.Errorf("a full page: %+v", r)
	}
	r = f.cli("list", "--limit", "2", "--before", "2026-11-28T03:08:00.5Z,eb", "-o", "table")
	if q := f.requests()[len(f.requests())-1].Query; r.code != 0 || !strings.Contains(q, "before=2026-11-28T03%3A08%3A00.5Z%2Ceb") {
		t.Errorf("list --before: query %q, %+v", q, r)
	}
	f.reply("GET /executions", 200, map[string]any{"executions": page(1)})
	if r := f.cli("list", "--limit", "2", "-o", "table"); r.code != 0 || strings.Contains(r.stderr, "more:") {
		t.Errorf("a last page: %+v", r)
	}
}

// events --step and --type keep the events of a real execution's steps
// and types (recorded), in both formats and with --follow.
func TestEventsFilters(t *testing.T) {
	f := newFake(t)
	id, evs := recorded(t, f, "ok")
	want := 0
	for _, e := range evs {
		if e["step"] == "fan" && strings.HasPrefix(e["event_type"].(string), "task.attempt.") {
			want++
		}
	}
	if want < 3 {
		t.Fatalf("the recording has %d task attempt events of fan", want)
	}
	var got struct {
		Count  int              `json:"count"`
		Events []map[string]any `json:"events"`
	}
	r := f.cli("events", id, "--step", "fan", "--type", "task.attempt", "-o", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Count != want || len(got.Events) != want {
		t.Fatalf("events --step fan --type task.attempt: %d events, want %d (%+v)", got.Count, want, r.code)
	}
	for _, e := range got.Events {
		if e["step"] != "fan" || !strings.HasPrefix(e["event_type"].(string), "task.attempt.") {
			t.Errorf("kept %v", e)
		}
	}
	r = f.cli("events", id, "--type", "step.done,playbook.finished", "-o", "table")
	n := 0
	for _, e := range evs {
		if e["event_type"] == "step.done" || e["event_type"] == "playbook.finished" {
			n++
		}
	}
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != n || strings.Contains(r.stdout, "task.attempt") {
		t.Errorf("events --type step.done,playbook.finished: %d lines, want %d:\n%s", len(lines), n, r.stdout)
	}
	r = f.cli("events", id, "--follow", "--step", "fan", "--type", "task.attempt", "-o", "json")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != want {
		t.Errorf("events --follow with filters: %d lines, want %d: %+v", len(lines), want, r)
	}
}

// --workload @FILE and - read the workload from a file and from stdin.
func TestWorkloadFromFileAndStdin(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	wl := writeFile(t, "wl.json", `{"from": "file"}`)
	f := runFake(t, map[string]any{"execution_id": "e1", "status": "ok", "results": map[string]any{}})
	if r := f.cli("run", pb, "--workload", "@"+wl); r.code != 0 {
		t.Fatalf("--workload @file: %+v", r)
	}
	a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL()})
	a.stdin = strings.NewReader(`{"from": "stdin"}`)
	if r := execApp(a, so, se, "run", pb, "--workload", "-"); r.code != 0 {
		t.Fatalf("--workload -: %+v", r)
	}
	var posts []map[string]any
	for _, q := range f.requests() {
		if q.Method == http.MethodPost {
			posts = append(posts, q.Body["workload"].(map[string]any))
		}
	}
	if len(posts) != 2 || posts[0]["from"] != "file" || posts[1]["from"] != "stdin" {
		t.Errorf("workloads sent: %v", posts)
	}
	if r := f.cli("run", pb, "--workload", "@/nonexistent/wl.json"); r.code != ExitInvalid || !strings.Contains(r.stderr, "--workload @/nonexistent/wl.json") {
		t.Errorf("a missing workload file: %+v", r)
	}
}
