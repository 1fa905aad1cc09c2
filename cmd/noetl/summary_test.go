package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// recorded serves a recorded execution (testdata/summary/NAME.status.json
// and NAME.events.json: the api's answers for a real execution on the
// stack) on the fake api and returns its id.
func recorded(t *testing.T, f *fakeAPI, name string) (id string, events []map[string]any) {
	t.Helper()
	read := func(kind string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "summary", name+"."+kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	st, evs := read("status"), read("events")
	var doc struct {
		ExecutionID string `json:"execution_id"`
	}
	var el struct {
		Events []map[string]any `json:"events"`
	}
	if json.Unmarshal(st, &doc) != nil || json.Unmarshal(evs, &el) != nil || doc.ExecutionID == "" {
		t.Fatalf("testdata/summary/%s: not the api's JSON", name)
	}
	raw := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
		}
	}
	f.on("GET /executions/"+doc.ExecutionID, raw(st))
	f.on("GET /executions/"+doc.ExecutionID+"/events", raw(evs))
	return doc.ExecutionID, el.Events
}

// The summary a person sees at the end of run (and of wait) on a terminal,
// rendered from real executions' status and events: the whole text (the
// golden file), and each step's attempts recounted from the events here.
func TestSummaryOfRecordedExecutions(t *testing.T) {
	for _, c := range []struct {
		name string
		code int
	}{{"ok", ExitOK}, {"failed", ExitFailed}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			id, evs := recorded(t, f, c.name)
			r := f.cli("wait", id, "-o", "table")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %+v", r.code, c.code, r)
			}
			if r.stderr != "" {
				t.Errorf("wait on an ended execution printed progress: %q", r.stderr)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "summary", c.name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(r.stdout, f.URL(), "API")
			if got != string(want) {
				t.Errorf("summary:\n%s\nwant:\n%s", got, want)
			}
			// Each step's row carries the attempts its events record.
			started, failed := map[string]int{}, map[string]int{}
			for _, e := range evs {
				step, _ := e["step"].(string)
				switch e["event_type"] {
				case "task.attempt.started":
					started[step]++
				case "task.attempt.failed":
					failed[step]++
				}
			}
			rows := 0
			for _, line := range strings.Split(got, "\n") {
				fields := strings.Fields(line)
				if len(fields) < 4 || started[fields[0]] == 0 {
					continue
				}
				rows++
				if fields[3] != strconv.Itoa(started[fields[0]]) {
					t.Errorf("step %s: attempts %s, the events hold %d", fields[0], fields[3], started[fields[0]])
				}
				if n := failed[fields[0]]; n > 0 && !strings.Contains(line, "("+strconv.Itoa(n)+" failed)") {
					t.Errorf("step %s: %q does not count %d failed attempts", fields[0], line, n)
				}
			}
			if rows != len(started) {
				t.Errorf("%d step rows with attempts, the events have %d steps with attempts", rows, len(started))
			}
			// json: the one line scripts read, unchanged.
			r = f.cli("wait", id, "-o", "json")
			var m map[string]any
			if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil || m["execution_id"] != id {
				t.Errorf("wait -o json: %q", r.stdout)
			}
		})
	}
}

// run prints the summary on a terminal (--output table, or a terminal
// stdout) and the JSON line otherwise.
func TestRunSummaryOnTerminal(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	f := newFake(t)
	id, _ := recorded(t, f, "ok")
	f.reply("POST /executions", 202, map[string]any{"execution_id": id})
	a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL()})
	a.isTTY = true
	r := execApp(a, so, se, "run", pb)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "execution "+id+": ok in 101ms (examples/routing)\n") ||
		!strings.Contains(r.stdout, "\nconsole: "+f.URL()+"/console/executions/"+id+"\n") {
		t.Errorf("run on a terminal:\n%s\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "after_loop") {
		t.Errorf("run shows no progress on stderr: %q", r.stderr)
	}
	r = f.cli("run", pb)
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"duration_ms":101,"execution_id":"`+id+`","status":"ok","steps":{`) || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("run into a pipe: %q", r.stdout)
	}
}

// The events the summary counts attempts from are read once projected;
// an api whose events route fails still gets a summary (attempts "-").
func TestSummaryWithoutEvents(t *testing.T) {
	f := newFake(t)
	id, _ := recorded(t, f, "ok")
	f.reply("GET /executions/"+id+"/events", 500, map[string]any{"error": "boom"})
	r := f.cli("wait", id, "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "\nfan         ok       1     -         63ms      3/3\n") {
		t.Errorf("summary without events:\n%s%s", r.stdout, r.stderr)
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, c := range []struct {
		v    any
		want []string
	}{
		{map[string]any{"b": 1, "a": "two"}, []string{"a: two", "b: 1"}},
		{map[string]any{"a": 1, "b": 2, "c": 3, "d": 4}, []string{"a: 1", "b: 2", "… 2 more keys"}},
		{[]any{1, map[string]any{"k": "v"}}, []string{"2 items:", "- 1", `- {"k":"v"}`}},
		{[]any{1, 2, 3, 4}, []string{"4 items:", "- 1", "… 3 more items"}},
		{"one\ntwo\nthree\nfour", []string{"one", "two", "… 2 more lines"}},
		{long, []string{strings.Repeat("x", 19) + "…"}},
		{nil, []string{"null"}},
		{3.5, []string{"3.5"}},
	} {
		got := excerpt(c.v, 3, 20)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("excerpt(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestFmtDuration(t *testing.T) {
	for ms, want := range map[int64]string{0: "-", 9: "9ms", 999: "999ms", 1000: "1.0s", 23416: "23.4s", 164000: "2m44s", 3600000: "1h0m0s"} {
		if got := fmtDuration(ms); got != want {
			t.Errorf("fmtDuration(%d) = %q, want %q", ms, got, want)
		}
	}
}

// run --path starts the catalog's playbook (no file read, nothing inline);
// --detach prints the id and returns without polling.
func TestRunPathAndDetach(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	f := runFake(t, map[string]any{"execution_id": "e1", "status": "ok", "duration_ms": 5, "results": map[string]any{}})
	r := f.cli("run", "--path", "examples/hello", "--version", "2", "--workload", `{"a": 1}`)
	post := f.requests()[0]
	if r.code != 0 || post.Path != "/executions" || post.Body["path"] != "examples/hello" || post.Body["version"] != float64(2) ||
		post.Body["playbook"] != nil || post.Body["workload"].(map[string]any)["a"] != float64(1) {
		t.Errorf("run --path: %+v %+v", r, post)
	}
	if !strings.Contains(r.stderr, "execution e1 started (examples/hello)") {
		t.Errorf("run --path stderr: %q", r.stderr)
	}
	for _, args := range [][]string{{"run"}, {"run", pb, "--path", "x"}, {"run", pb, "--version", "3"}} {
		if r := f.cli(args...); r.code != ExitInvalid || !strings.Contains(r.stderr, "--path") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	n := f.count("GET /executions/e1")
	r = f.cli("run", pb, "--detach")
	if r.code != 0 || r.stdout != `{"execution_id":"e1"}`+"\n" || !strings.Contains(r.stderr, "scripts/noetl wait e1") {
		t.Errorf("run --detach (json): %+v", r)
	}
	r = f.cli("run", "--path", "examples/hello", "--detach", "--quiet", "-o", "table")
	if r.code != 0 || r.stdout != "e1\n" || r.stderr != "" {
		t.Errorf("run --detach (table): %+v", r)
	}
	if f.count("GET /executions/e1") != n {
		t.Errorf("--detach polled the execution")
	}
	// An unknown catalog path: the api's refusal, exit 2.
	f.reply("POST /executions", 400, map[string]any{"error": "playbook nope not found"})
	if r := f.cli("run", "--path", "nope"); r.code != ExitInvalid || !strings.Contains(r.stderr, "not found") {
		t.Errorf("unknown path: %+v", r)
	}
}

// The summary counts attempts once every unit's end is projected: the
// recorded executions are complete; without playbook.finished, one step
// end or one iteration end they are not.
func TestEventsComplete(t *testing.T) {
	for _, name := range []string{"ok", "failed"} {
		var st inspect.Status
		var el struct {
			Events []types.Event `json:"events"`
		}
		for kind, v := range map[string]any{"status": &st, "events": &el} {
			b, err := os.ReadFile(filepath.Join("testdata", "summary", name+"."+kind+".json"))
			if err != nil || json.Unmarshal(b, v) != nil {
				t.Fatalf("%s.%s: %v", name, kind, err)
			}
		}
		if !inspect.LogComplete(&st, el.Events) {
			t.Errorf("%s: the recorded log is not complete", name)
		}
		for _, drop := range []types.EventType{types.EvPlaybookFinished, types.EvStepDone, types.EvLoopIterationDone} {
			var less []types.Event
			dropped := false
			for i := len(el.Events) - 1; i >= 0; i-- {
				if !dropped && el.Events[i].EventType == drop {
					dropped = true
					continue
				}
				less = append(less, el.Events[i])
			}
			if !dropped {
				t.Fatalf("%s: no %s", name, drop)
			}
			if inspect.LogComplete(&st, less) {
				t.Errorf("%s: complete without its last %s", name, drop)
			}
		}
	}
}
