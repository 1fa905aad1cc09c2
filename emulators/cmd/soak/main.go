// Command soak is the fault-injection soak of the local stack (issue 7):
// it runs many executions of a demo-like playbook — a parallel loop over
// countries, pagination of the fixture API with injected 503s retried with
// backoff, a python transform, PostgreSQL INSERTs without upsert — while
// the stack injects faults (scripts/soak starts it with
// NOETL_DELIVERY_CHAOS and NOETL_FAULTS: crashes of execute and route
// before and after their writes, duplicated, delayed and reordered Pub/Sub
// and Cloud Tasks deliveries) and this program restarts the functions host
// now and then and cancels some executions. Then it checks that work was
// never lost nor done twice:
//
//   - every execution reached a terminal status;
//   - the database holds exactly the expected rows of every execution that
//     ended ok (none missing), and no row twice in any execution;
//   - every execution's event chain is complete (seq 1..n, prev_event_id
//     links, one request and one finish, every started step run and
//     iteration ended);
//   - no unit is both in the DLQ (pending) and done;
//   - a canceled execution started no unit after its cancel.
//
// It ends with one JSON line of figures and exits 0 only if all hold.
// Usage: soak [--executions N] [--seed S] [--cancel-every K]
// [--restart-every D] [--timeout D]; the stack's environment (.stack/env)
// must be loaded.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed soak.yaml
var playbook string

type result struct {
	Executions         int            `json:"executions"`
	Terminal           int            `json:"terminal"`
	OK                 int            `json:"ok"`
	Failed             int            `json:"failed"`
	Canceled           int            `json:"canceled"`
	Faults             map[string]int `json:"faults"`
	Retries            int            `json:"retries"`
	Reclaims           int            `json:"reclaims"`
	DLQ                int            `json:"dlq"`
	RowsExpected       int64          `json:"rows_expected"`
	RowsFound          int64          `json:"rows_found"`
	DuplicateRows      int64          `json:"duplicate_rows"`
	IncompleteChains   int            `json:"incomplete_chains"`
	DLQAndDone         int            `json:"dlq_and_done"`
	StartedAfterCancel int            `json:"started_after_cancel"`
	WallS              float64        `json:"wall_s"`
	Problems           []string       `json:"problems,omitempty"`
}

func main() {
	n := flag.Int("executions", 200, "executions to run")
	seed := flag.Uint64("seed", 1, "seed of the choices (countries, cancellations)")
	cancelEvery := flag.Int("cancel-every", 10, "cancel every K-th execution shortly after its start (0: none)")
	restartEvery := flag.Duration("restart-every", 20*time.Second, "kill the functions host this often (0: never)")
	concurrency := flag.Int("concurrency", 8, "executions running at once")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up waiting for executions after this")
	flag.Parse()
	started := time.Now()
	s := &soak{api: apiURL(), token: os.Getenv("NOETL_API_TOKEN"), fixtures: os.Getenv("NOETL_FIXTURES_URL"),
		dsn: os.Getenv("NOETL_PG_DSN"), stackDir: os.Getenv("NOETL_STACK_DIR"), rng: rand.New(rand.NewPCG(*seed, 7)),
		tag: fmt.Sprintf("soak-%d-%d", *seed, started.Unix())}
	if s.fixtures == "" || s.dsn == "" || s.stackDir == "" {
		fail("the stack's environment is not loaded (source .stack/env)")
	}
	r := s.run(*n, *cancelEvery, *restartEvery, *concurrency, *timeout)
	r.WallS = time.Since(started).Seconds()
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	if len(r.Problems) > 0 {
		os.Exit(1)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", a...)
	os.Exit(2)
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, "soak: "+format+"\n", a...) }

func apiURL() string {
	if v := os.Getenv("NOETL_API_URL"); v != "" {
		return strings.TrimSuffix(v, "/")
	}
	return strings.TrimSuffix(os.Getenv("NOETL_FUNCTIONS_URL"), "/") + "/api"
}

type soak struct {
	api, token, fixtures, dsn, stackDir, tag string
	rng                                      *rand.Rand
	mu                                       sync.Mutex
	expected                                 map[string][]string // country → subdivision codes
}

type run struct {
	id        string
	countries []string
	canceled  time.Time
	status    string
}

// call is one API call, retried while the functions host restarts.
func (s *soak) call(method, path string, body any) (int, map[string]any, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, err := http.NewRequest(method, s.api+path, bytes.NewReader(raw))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if s.token != "" {
			req.Header.Set("Authorization", "Bearer "+s.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode < 500 {
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m map[string]any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			_ = d.Decode(&m)
			return resp.StatusCode, m, nil
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
			}
			return 0, nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *soak) run(n, cancelEvery int, restartEvery time.Duration, concurrency int, timeout time.Duration) *result {
	r := &result{Executions: n, Faults: map[string]int{}}
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		fail("postgres: %v", err)
	}
	defer pg.Close(ctx)
	if _, err := pg.Exec(ctx, `CREATE TABLE IF NOT EXISTS soak_rows (run_tag text, execution_id text, country text, code text, page int)`); err != nil {
		fail("postgres: %v", err)
	}
	countries := s.countries()
	offsets := s.logOffsets()

	// Restart the functions host now and then (as an instance would die).
	stop := make(chan struct{})
	restarts := 0
	var wg sync.WaitGroup
	if restartEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(restartEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if s.killHost() {
						restarts++
					}
				}
			}
		}()
	}

	runs := make([]*run, n)
	sem := make(chan struct{}, concurrency)
	var rw sync.WaitGroup
	for i := range n {
		picked := []string{}
		for len(picked) < 3 {
			c := countries[s.rng.IntN(len(countries))]
			if !contains(picked, c) {
				picked = append(picked, c)
			}
		}
		cancel := cancelEvery > 0 && i%cancelEvery == cancelEvery-1
		sem <- struct{}{}
		rw.Add(1)
		go func() {
			defer rw.Done()
			defer func() { <-sem }()
			ru := &run{countries: picked}
			runs[i] = ru
			code, m, err := s.call(http.MethodPost, "/executions", map[string]any{"playbook": playbook, "workload": map[string]any{
				"api_url": s.fixtures, "pg_dsn": s.dsn, "run_tag": s.tag, "countries": picked}})
			if err != nil || code != http.StatusAccepted {
				logf("start %d failed: %d %v %v", i, code, m, err)
				return
			}
			ru.id = fmt.Sprint(m["execution_id"])
			if cancel {
				time.Sleep(time.Duration(500+s.intn(2000)) * time.Millisecond)
				if code, _, err := s.call(http.MethodPost, "/executions/"+ru.id+"/cancel", map[string]any{"reason": "soak"}); err == nil && code == http.StatusAccepted {
					ru.canceled = time.Now()
				}
			}
			ru.status = s.wait(ru.id, timeout)
			if i%20 == 19 {
				logf("%d executions started", i+1)
			}
		}()
	}
	rw.Wait()
	close(stop)
	wg.Wait()
	r.Faults["host_restart"] = restarts
	logf("all executions ended or timed out; checking")
	time.Sleep(3 * time.Second) // late projections (chaos delays)

	for _, ru := range runs {
		if ru == nil || ru.id == "" {
			r.Problems = append(r.Problems, "an execution failed to start")
			continue
		}
		switch ru.status {
		case "ok":
			r.OK++
		case "failed":
			r.Failed++
		case "canceled":
			r.Canceled++
		default:
			r.Problems = append(r.Problems, fmt.Sprintf("execution %s not terminal (%s)", ru.id, ru.status))
			continue
		}
		r.Terminal++
		s.checkRows(ctx, pg, ru, r)
		s.checkEvents(ru, r)
	}
	s.checkDLQ(runs, r)
	for k, v := range s.faultCounts(offsets) {
		r.Faults[k] += v
	}
	if r.RowsFound != r.RowsExpected {
		r.Problems = append(r.Problems, fmt.Sprintf("rows found %d, expected %d", r.RowsFound, r.RowsExpected))
	}
	if r.DuplicateRows > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d duplicate rows", r.DuplicateRows))
	}
	if r.IncompleteChains > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d incomplete event chains", r.IncompleteChains))
	}
	if r.DLQAndDone > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d units both in the DLQ and done", r.DLQAndDone))
	}
	if r.StartedAfterCancel > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d units started after their execution's cancel", r.StartedAfterCancel))
	}
	if len(r.Problems) > 20 {
		r.Problems = append(r.Problems[:20], fmt.Sprintf("... and %d more", len(r.Problems)-20))
	}
	return r
}

func (s *soak) intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

func contains(l []string, x string) bool {
	for _, y := range l {
		if y == x {
			return true
		}
	}
	return false
}

// countries returns the country codes with 1 to 40 subdivisions, and
// remembers each one's subdivision codes (the expected rows).
func (s *soak) countries() []string {
	s.expected = map[string][]string{}
	var all []string
	for page := 1; ; page++ {
		var body struct {
			Data []struct {
				Alpha2 string `json:"alpha_2"`
			} `json:"data"`
			Paging struct {
				HasMore bool `json:"has_more"`
			} `json:"paging"`
		}
		s.getFixture(fmt.Sprintf("/countries?page=%d&page_size=100", page), &body)
		for _, c := range body.Data {
			all = append(all, c.Alpha2)
		}
		if !body.Paging.HasMore {
			break
		}
	}
	var out []string
	for _, c := range all {
		var body struct {
			Data []struct {
				Code string `json:"code"`
			} `json:"data"`
		}
		s.getFixture("/countries/"+c+"/subdivisions?page=1&page_size=1000", &body)
		if n := len(body.Data); n >= 1 && n <= 40 {
			codes := make([]string, n)
			for i, d := range body.Data {
				codes[i] = d.Code
			}
			s.expected[c] = codes
			out = append(out, c)
		}
	}
	sort.Strings(out)
	if len(out) < 10 {
		fail("the fixtures serve too few countries (%d)", len(out))
	}
	return out
}

// getFixture GETs the fixture API, retrying its injected 503s.
func (s *soak) getFixture(path string, v any) {
	for attempt := 0; ; attempt++ {
		resp, err := http.Get(s.fixtures + path)
		if err == nil && resp.StatusCode == 200 {
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				fail("fixtures %s: %v", path, err)
			}
			return
		}
		if err == nil {
			resp.Body.Close()
		}
		if attempt > 20 {
			fail("fixtures %s: %v", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *soak) wait(id string, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		code, m, err := s.call(http.MethodGet, "/executions/"+id, nil)
		if err == nil && code == 200 {
			switch st := fmt.Sprint(m["status"]); st {
			case "ok", "failed", "canceled":
				return st
			}
		}
		time.Sleep(time.Second)
	}
	_, m, _ := s.call(http.MethodGet, "/executions/"+id, nil)
	return fmt.Sprint(m["status"])
}

func (s *soak) checkRows(ctx context.Context, pg *pgx.Conn, ru *run, r *result) {
	var found, dup int64
	if err := pg.QueryRow(ctx, `SELECT count(*) FROM soak_rows WHERE execution_id = $1`, ru.id).Scan(&found); err != nil {
		r.Problems = append(r.Problems, "postgres: "+err.Error())
		return
	}
	if err := pg.QueryRow(ctx, `SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM soak_rows WHERE execution_id = $1 GROUP BY country, code HAVING count(*) > 1) d`, ru.id).Scan(&dup); err != nil {
		r.Problems = append(r.Problems, "postgres: "+err.Error())
		return
	}
	r.DuplicateRows += dup
	if ru.status != "ok" {
		return // canceled or failed executions load part of their rows
	}
	var want int64
	for _, c := range ru.countries {
		want += int64(len(s.expected[c]))
	}
	r.RowsExpected += want
	r.RowsFound += found
	if found != want {
		r.Problems = append(r.Problems, fmt.Sprintf("execution %s: %d rows, want %d", ru.id, found, want))
	}
}

func (s *soak) checkEvents(ru *run, r *result) {
	code, m, err := s.call(http.MethodGet, "/executions/"+ru.id+"/events", nil)
	if err != nil || code != 200 {
		r.IncompleteChains++
		return
	}
	list, _ := m["events"].([]any)
	prev := ""
	requested, finished := 0, 0
	started, ended := map[string]bool{}, map[string]bool{}
	problem := ""
	for i, x := range list {
		e, _ := x.(map[string]any)
		if fmt.Sprint(e["seq"]) != fmt.Sprint(i+1) || fmt.Sprint(e["prev_event_id"]) != prev {
			problem = fmt.Sprintf("seq/prev broken at %d", i+1)
		}
		prev = fmt.Sprint(e["event_id"])
		typ := fmt.Sprint(e["event_type"])
		key := fmt.Sprintf("%v.%v.%v", e["step"], e["step_run"], e["iteration"])
		switch typ {
		case "playbook.execution.requested":
			requested++
		case "playbook.finished":
			finished++
		case "step.started":
			started["step "+fmt.Sprintf("%v.%v", e["step"], e["step_run"])] = true
		case "step.done", "step.failed", "step.canceled":
			ended["step "+fmt.Sprintf("%v.%v", e["step"], e["step_run"])] = true
		case "loop.iteration.started":
			started["iteration "+key] = true // again on a re-run
		case "loop.iteration.done", "loop.iteration.failed":
			ended["iteration "+key] = true
		}
		if typ == "loop.iteration.started" || typ == "step.started" || typ == "task.attempt.started" {
			if !ru.canceled.IsZero() {
				if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["timestamp"])); err == nil && ts.After(ru.canceled.Add(time.Second)) {
					r.StartedAfterCancel++
				}
			}
		}
		if typ == "task.attempt.started" {
			if a := fmt.Sprint(e["attempt"]); a != "1" && a != "0" {
				r.Retries++
			}
		}
		if typ == "unit.reclaimed" {
			r.Reclaims++
		}
	}
	if requested != 1 || finished != 1 {
		problem = fmt.Sprintf("%d requested and %d finished events", requested, finished)
	}
	for k := range started {
		// A canceled execution's running iterations and steps stop at a
		// task boundary without ending events of their own; a failed
		// execution's other running steps stop with it.
		if !ended[k] && (ru.status == "ok" || (ru.status == "failed" && strings.HasPrefix(k, "iteration "))) {
			problem = "unended " + k
		}
	}
	if problem != "" {
		r.IncompleteChains++
		r.Problems = append(r.Problems, fmt.Sprintf("execution %s (%s): %s", ru.id, ru.status, problem))
	}
}

func (s *soak) checkDLQ(runs []*run, r *result) {
	mine := map[string]bool{}
	for _, ru := range runs {
		if ru != nil && ru.id != "" {
			mine[ru.id] = true
		}
	}
	_, m, err := s.call(http.MethodGet, "/dlq?limit=1000", nil)
	if err != nil {
		r.Problems = append(r.Problems, "dlq: "+err.Error())
		return
	}
	list, _ := m["entries"].([]any)
	for _, x := range list {
		e, _ := x.(map[string]any)
		id := fmt.Sprint(e["execution_id"])
		if !mine[id] {
			continue
		}
		r.DLQ++
		if e["status"] != "pending" || e["kind"] != "unit" {
			continue
		}
		// Pending and done: the unit's step run (or iteration) ended ok.
		_, ev, err := s.call(http.MethodGet, "/executions/"+id+"/events", nil)
		if err != nil {
			continue
		}
		evs, _ := ev["events"].([]any)
		for _, y := range evs {
			x, _ := y.(map[string]any)
			if x["step"] != e["step_id"] {
				continue
			}
			done := x["event_type"] == "step.done"
			if e["loop_index"] != nil {
				done = x["event_type"] == "loop.iteration.done" && fmt.Sprint(x["iteration"]) == fmt.Sprint(e["loop_index"])
			}
			if done {
				r.DLQAndDone++
				break
			}
		}
	}
}

// logFiles are the stack's logs the figures are counted from.
var logFiles = []string{"functions.log", "bridge.log", "cloudtasks.log"}

// logOffsets returns the number of lines of each log file now (figures
// are counted from there).
func (s *soak) logOffsets() map[string]int {
	out := map[string]int{}
	for _, name := range logFiles {
		n := 0
		s.scanLog(name, func(int, []byte) { n++ })
		out[name] = n
	}
	return out
}

// scanLog calls fn with each line of the stack's log file name.
func (s *soak) scanLog(name string, fn func(i int, line []byte)) {
	f, err := os.Open(filepath.Join(s.stackDir, "logs", name))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for i := 0; sc.Scan(); i++ {
		fn(i, sc.Bytes())
	}
}

// faultCounts counts what was injected since the offsets: the functions
// log's fault_injected lines (by point.action) and the chaos duplicate
// deliveries of the push bridges and the Cloud Tasks emulator.
func (s *soak) faultCounts(from map[string]int) map[string]int {
	out := map[string]int{"pubsub.duplicate": 0, "cloudtasks.duplicate": 0}
	s.scanLog("functions.log", func(i int, line []byte) {
		if i < from["functions.log"] || !bytes.Contains(line, []byte(`"fault_injected"`)) {
			return
		}
		var l struct{ Point, Action string }
		if json.Unmarshal(line, &l) == nil && l.Point != "" {
			out[l.Point+"."+l.Action]++
		}
	})
	for _, lf := range []struct{ file, what string }{{"bridge.log", "pubsub.duplicate"}, {"cloudtasks.log", "cloudtasks.duplicate"}} {
		s.scanLog(lf.file, func(i int, line []byte) {
			if i >= from[lf.file] && bytes.Contains(line, []byte("duplicate delivery")) {
				out[lf.what]++
			}
		})
	}
	return out
}

// killHost kills the functions host (the stack's supervisor restarts it).
func (s *soak) killHost() bool {
	out, err := exec.Command("pgrep", "-f", "^"+regexp.QuoteMeta(filepath.Join(s.stackDir, "bin", "functions"))+"$").Output()
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			logf("killed the functions host (pid %d)", pid)
			return true
		}
	}
	return false
}
