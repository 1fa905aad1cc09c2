// Command soak is the fault-injection soak of the local stack (README "Resilience" and
// "The soak"): it runs many executions of a demo-like playbook — a parallel
// loop over countries, pagination of the fixture API with injected 503s
// retried with backoff, a python transform, PostgreSQL INSERTs without
// upsert — while the stack injects faults (scripts/soak starts it with
// NOETL_DELIVERY_CHAOS and NOETL_FAULTS: crashes of execute, route and the
// api before and after their writes and of the DLQ operations between
// their two calls, transient errors, duplicated, delayed and reordered
// Pub/Sub and Cloud Tasks deliveries) and this program restarts the
// functions host now and then, cancels some executions, and makes some
// units exhaust their attempts (a workload fault) so that, as an operator
// would, it replays or discards their DLQ entries while it runs. Then it
// checks that work was never lost nor done twice:
//
//   - every execution reached a terminal status;
//   - the database holds exactly the expected rows of every execution that
//     ended ok (none missing), and no row twice in any execution;
//   - every execution's event chain is complete (seq 1..n, prev_event_id
//     links, one request and one finish, every started step run and
//     iteration ended — done, failed or canceled);
//   - no unit is both in the DLQ (pending) and done, and no entry of the
//     soak's executions is left pending;
//   - an execution whose DLQ entry was discarded failed; one whose entries
//     were all replayed ended ok (unless canceled);
//   - a canceled execution started no unit after its cancel.
//
// It ends with one JSON line of figures and exits 0 only if all hold.
// Usage: soak [--executions N] [--seed S] [--cancel-every K] [--dlq-every K]
// [--discard-share F] [--restart-every D] [--concurrency C] [--timeout D];
// the stack's environment (.stack/env) must be loaded. scripts/soak runs
// it once per seed (--seeds, --runs).
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed soak.yaml
var playbook string

type result struct {
	Seed               uint64         `json:"seed"`
	Executions         int            `json:"executions"`
	Terminal           int            `json:"terminal"`
	OK                 int            `json:"ok"`
	Failed             int            `json:"failed"`
	Canceled           int            `json:"canceled"`
	Faults             map[string]int `json:"faults"`
	Retries            int            `json:"retries"`
	Reclaims           int            `json:"reclaims"`
	DLQ                int            `json:"dlq"`
	DLQStatus          map[string]int `json:"dlq_status"`
	Operator           map[string]int `json:"operator"`
	RowsExpected       int64          `json:"rows_expected"`
	RowsFound          int64          `json:"rows_found"`
	DuplicateRows      int64          `json:"duplicate_rows"`
	IncompleteChains   int            `json:"incomplete_chains"`
	DLQAndDone         int            `json:"dlq_and_done"`
	StartedAfterCancel int            `json:"started_after_cancel"`
	DLQOutcomes        int            `json:"dlq_outcome_mismatches"`
	WallS              float64        `json:"wall_s"`
	Problems           []string       `json:"problems,omitempty"`
}

func main() {
	n := flag.Int("executions", 200, "executions to run")
	seed := flag.Uint64("seed", 1, "seed of the choices (countries, cancellations)")
	cancelEvery := flag.Int("cancel-every", 10, "cancel every K-th execution shortly after its start (0: none)")
	dlqEvery := flag.Int("dlq-every", 7, "make one unit of every K-th execution exhaust its attempts, to replay or discard its DLQ entry (0: none)")
	discardShare := flag.Float64("discard-share", 0.25, "share of the DLQ entries discarded (the others are replayed)")
	restartEvery := flag.Duration("restart-every", 20*time.Second, "kill the functions host this often (0: never)")
	concurrency := flag.Int("concurrency", 8, "executions running at once")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up waiting for executions after this")
	derive := flag.String("derive-seeds", "", "BASE:N prints N seeds derived from BASE, one per line, and exits (scripts/soak --runs)")
	seedOf := flag.String("seed-of", "", "prints the seed derived from this text (a commit id, a date) and exits (scripts/test)")
	summarize := flag.Bool("summarize", false, "reads the JSON lines of soak runs on stdin, prints their summary line, and exits 1 if one failed")
	flag.Parse()
	switch {
	case *derive != "":
		base, n, err := parseDerive(*derive)
		if err != nil {
			fail("--derive-seeds: %v", err)
		}
		for _, v := range DeriveSeeds(base, n) {
			fmt.Println(v)
		}
		return
	case *seedOf != "":
		fmt.Println(SeedOf(*seedOf))
		return
	case *summarize:
		line, ok := Summarize(os.Stdin)
		fmt.Println(line)
		if !ok {
			os.Exit(1)
		}
		return
	}
	started := time.Now()
	s := &soak{api: apiURL(), token: os.Getenv("NOETL_API_TOKEN"), fixtures: os.Getenv("NOETL_FIXTURES_URL"),
		dsn: os.Getenv("NOETL_PG_DSN"), stackDir: os.Getenv("NOETL_STACK_DIR"), rng: rand.New(rand.NewPCG(*seed, 7)),
		tag: fmt.Sprintf("soak-%d-%d", *seed, started.Unix()), seed: *seed, dlqEvery: *dlqEvery, discardShare: *discardShare}
	if s.fixtures == "" || s.dsn == "" || s.stackDir == "" {
		fail("the stack's environment is not loaded (source .stack/env)")
	}
	r := s.run(*n, *cancelEvery, *restartEvery, *concurrency, *timeout)
	r.Seed = *seed
	r.WallS = time.Since(started).Seconds()
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	if len(r.Problems) > 0 {
		os.Exit(1)
	}
}

// DeriveSeeds returns n seeds derived from base (splitmix64 of base+i, cut
// to 31 bits so that they read and type easily): the seeds of
// scripts/soak --runs.
func DeriveSeeds(base uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range n {
		z := base + uint64(i+1)*0x9e3779b97f4a7c15
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		out[i] = (z ^ (z >> 31)) & 0x7fffffff
	}
	return out
}

// SeedOf derives a seed from a text (a commit id, a date): scripts/test
// runs the short soak with the seed of the commit it tests, so each commit
// sees a new fault schedule, printed so that a failure can be replayed.
func SeedOf(text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.TrimSpace(text)))
	return h.Sum64() & 0x7fffffff
}

func parseDerive(v string) (uint64, int, error) {
	b, n, ok := strings.Cut(v, ":")
	base, err := strconv.ParseUint(b, 10, 64)
	count, err2 := strconv.Atoi(n)
	if !ok || err != nil || err2 != nil || count < 1 || count > 1000 {
		return 0, 0, fmt.Errorf("%q is not BASE:N (a seed, and 1 to 1000 runs)", v)
	}
	return base, count, nil
}

// Summarize reads soak JSON lines (one per seed; other lines are ignored)
// and returns the summary line — {"summary": true, "runs", "seeds",
// "passed", "failed" (seeds), "executions", "terminal", "problems"} — and
// whether every run passed (and there was at least one).
func Summarize(r io.Reader) (string, bool) {
	sum := struct {
		Summary    bool     `json:"summary"`
		Runs       int      `json:"runs"`
		Seeds      []uint64 `json:"seeds"`
		Passed     []uint64 `json:"passed"`
		Failed     []uint64 `json:"failed"`
		Executions int      `json:"executions"`
		Terminal   int      `json:"terminal"`
		Problems   int      `json:"problems"`
	}{Summary: true, Seeds: []uint64{}, Passed: []uint64{}, Failed: []uint64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var res result
		if json.Unmarshal(sc.Bytes(), &res) != nil || res.Executions == 0 {
			continue
		}
		sum.Runs++
		sum.Seeds = append(sum.Seeds, res.Seed)
		sum.Executions += res.Executions
		sum.Terminal += res.Terminal
		sum.Problems += len(res.Problems)
		if len(res.Problems) == 0 {
			sum.Passed = append(sum.Passed, res.Seed)
		} else {
			sum.Failed = append(sum.Failed, res.Seed)
		}
	}
	b, _ := json.Marshal(sum)
	return string(b), sum.Runs > 0 && len(sum.Failed) == 0
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
	seed                                     uint64
	dlqEvery                                 int
	discardShare                             float64
	rng                                      *rand.Rand
	mu                                       sync.Mutex
	expected                                 map[string][]string // country → subdivision codes
	runs                                     map[string]*run     // by execution id, as they start
	handled                                  map[string]string   // DLQ entry → the operator's action
	operator                                 map[string]int
}

type run struct {
	id        string
	countries []string
	canceled  time.Time
	status    string
	// dlqStep is the step whose units exhaust their attempts ("" for
	// none); discarded reports the operator discarded one of its entries.
	dlqStep   string
	discarded bool
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

	// The operator: replays or discards the DLQ entries of the soak's
	// executions while they run.
	s.runs, s.handled, s.operator = map[string]*run{}, map[string]string{}, map[string]int{"replays": 0, "discards": 0, "already_done": 0, "conflicts": 0}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				s.operate() // a last pass: nothing is left pending
				return
			case <-t.C:
				s.operate()
			}
		}
	}()

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
		dlqStep := ""
		if s.dlqEvery > 0 && i%s.dlqEvery == s.dlqEvery-1 && !cancel {
			// The step unit "end", or every iteration of "load", fails at
			// execute.start on every attempt but its DLQ replay's.
			dlqStep = []string{"end", "load"}[(i/s.dlqEvery)%2]
		}
		sem <- struct{}{}
		rw.Add(1)
		go func() {
			defer rw.Done()
			defer func() { <-sem }()
			ru := &run{countries: picked, dlqStep: dlqStep}
			runs[i] = ru
			wl := map[string]any{"api_url": s.fixtures, "pg_dsn": s.dsn, "run_tag": s.tag, "countries": picked}
			if dlqStep != "" {
				wl["_noetl_faults"] = map[string]any{"execute.start@" + dlqStep: "error:1"}
			}
			code, m, err := s.call(http.MethodPost, "/executions", map[string]any{"playbook": playbook, "workload": wl})
			if err != nil || code != http.StatusAccepted {
				logf("start %d failed: %d %v %v", i, code, m, err)
				return
			}
			ru.id = fmt.Sprint(m["execution_id"])
			s.mu.Lock()
			s.runs[ru.id] = ru
			s.mu.Unlock()
			if cancel {
				time.Sleep(time.Duration(500+s.intn(2000)) * time.Millisecond)
				// A 409 "canceled" answers a cancel whose first try applied
				// (the host died before answering, and call retried).
				code, m, err := s.call(http.MethodPost, "/executions/"+ru.id+"/cancel", map[string]any{"reason": "soak"})
				if err == nil && (code == http.StatusAccepted || (code == http.StatusConflict && m["status"] == "canceled")) {
					ru.canceled = time.Now()
				} else {
					logf("cancel of %s not applied: %d %v %v", ru.id, code, m["status"], err)
				}
			}
			ru.status = s.wait(ru, timeout)
			if i%20 == 19 {
				logf("%d executions started", i+1)
			}
		}()
	}
	rw.Wait()
	close(stop)
	wg.Wait()
	r.Faults["host_restart"] = restarts
	for _, ru := range runs {
		if ru != nil && !ru.canceled.IsZero() {
			r.Faults["cancel"]++
		}
	}
	r.Operator = s.operator
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
			if ru.dlqStep == "" {
				// Only a discarded DLQ entry fails an execution: every
				// other fault is retried or recovered (end's check of
				// the tally loop fails it when an item is lost or doubled).
				r.Problems = append(r.Problems, fmt.Sprintf("execution %s failed without a DLQ step", ru.id))
			}
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
	if r.DLQOutcomes > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d executions ended otherwise than their DLQ entries' handling implies", r.DLQOutcomes))
	}
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

func (s *soak) wait(ru *run, timeout time.Duration) string {
	id := ru.id
	deadline := time.Now().Add(timeout)
	if ru.dlqStep != "" {
		// Its unit takes its attempts' backoffs (about 15 s) to reach the
		// DLQ, then waits for the operator.
		deadline = deadline.Add(time.Minute)
	}
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

// operate is one pass of the operator over the DLQ: each pending entry of
// the soak's executions is replayed, or discarded for a share of them
// (chosen from the entry id and the seed, so a seed replays the same
// choices). Calls that fail (an injected fault between the operation's
// two calls, a host restart) are retried by call; the retry must complete
// the operation.
func (s *soak) operate() {
	code, m, err := s.call(http.MethodGet, "/dlq?status=pending&limit=1000", nil)
	if err != nil || code != http.StatusOK {
		return
	}
	list, _ := m["entries"].([]any)
	for _, x := range list {
		e, _ := x.(map[string]any)
		id, exec := fmt.Sprint(e["message_id"]), fmt.Sprint(e["execution_id"])
		s.mu.Lock()
		ru := s.runs[exec]
		done := s.handled[id] != ""
		s.mu.Unlock()
		if ru == nil || done {
			continue
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d", id, s.seed)
		action, path, body := "replay", "/dlq/"+id+"/replay", map[string]any{}
		if float64(h.Sum64()%1000)/1000 < s.discardShare {
			action, path, body = "discard", "/dlq/"+id+"/discard", map[string]any{"reason": "soak operator"}
		}
		code, m, err := s.call(http.MethodPost, path, body)
		s.mu.Lock()
		switch {
		case err != nil:
			logf("dlq %s %s: %v", action, id, err)
		case code == http.StatusAccepted || code == http.StatusOK:
			s.handled[id] = action
			s.operator[action+"s"]++
			if action == "discard" {
				ru.discarded = true
			}
		case code == http.StatusConflict && m["already_done"] == true:
			s.handled[id] = "already_done"
			s.operator["already_done"]++
		case code == http.StatusConflict && fmt.Sprint(m["status"]) == action+"ed":
			// The operation's first try (the host died, or it failed
			// between its calls, and call retried it) was carried out:
			// the replayed unit marked its entry, or the discard did.
			s.handled[id] = action
			s.operator[action+"s"]++
			if action == "discard" {
				ru.discarded = true
			}
		default:
			s.handled[id] = "conflict"
			s.operator["conflicts"]++
			logf("dlq %s %s: %d %v", action, id, code, m)
		}
		s.mu.Unlock()
	}
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
		case "loop.iteration.done", "loop.iteration.failed", "loop.iteration.canceled":
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
		// Every unit ends in the log, whatever ended its execution: a
		// cancellation closes what it cuts short (step.canceled,
		// loop.iteration.canceled), and so does a halting failure.
		if !ended[k] {
			problem = "unended " + k
		}
	}
	if problem != "" {
		r.IncompleteChains++
		r.Problems = append(r.Problems, fmt.Sprintf("execution %s (%s): %s", ru.id, ru.status, problem))
	}
}

func (s *soak) checkDLQ(runs []*run, r *result) {
	mine := map[string]*run{}
	for _, ru := range runs {
		if ru != nil && ru.id != "" {
			mine[ru.id] = ru
		}
	}
	r.DLQStatus = map[string]int{"pending": 0, "replayed": 0, "discarded": 0, "done": 0}
	_, m, err := s.call(http.MethodGet, "/dlq?limit=1000", nil)
	if err != nil {
		r.Problems = append(r.Problems, "dlq: "+err.Error())
		return
	}
	list, _ := m["entries"].([]any)
	filed := map[string]bool{}
	for _, x := range list {
		e, _ := x.(map[string]any)
		id := fmt.Sprint(e["execution_id"])
		ru := mine[id]
		if ru == nil {
			continue
		}
		r.DLQ++
		r.DLQStatus[fmt.Sprint(e["status"])]++
		filed[id] = true
		if e["status"] != "pending" || e["kind"] != "unit" {
			continue
		}
		r.Problems = append(r.Problems, fmt.Sprintf("execution %s (%s): DLQ entry %v left pending", id, ru.status, e["message_id"]))
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
	// What the operator did decides how the execution ends: a discard
	// fails it; replays let it end ok (a cancellation wins over both).
	for _, ru := range mine {
		if ru.dlqStep == "" || ru.status == "canceled" {
			continue
		}
		want := "ok"
		if ru.discarded {
			want = "failed"
		}
		if !filed[ru.id] {
			r.Problems = append(r.Problems, fmt.Sprintf("execution %s (%s): its %s units never reached the DLQ", ru.id, ru.status, ru.dlqStep))
			r.DLQOutcomes++
		} else if ru.status != want {
			r.Problems = append(r.Problems, fmt.Sprintf("execution %s: %s, want %s after the operator's actions", ru.id, ru.status, want))
			r.DLQOutcomes++
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
//
// Every fault type the soak injects has its key, 0 when it never fired:
// each point of NOETL_FAULTS ("point.action"), the workload faults of the
// DLQ executions ("point.action@workload"), the chaos duplicates and
// delays of both delivery paths (every Cloud Tasks attempt and every
// Pub/Sub push is delayed by a random share of the chaos delay), and —
// added by run — host_restart and cancel.
func (s *soak) faultCounts(from map[string]int) map[string]int {
	out := map[string]int{"pubsub.duplicate": 0, "cloudtasks.duplicate": 0, "pubsub.delay": 0, "cloudtasks.delay": 0}
	for _, part := range strings.Split(os.Getenv("NOETL_FAULTS"), ",") {
		point, spec, ok := strings.Cut(strings.TrimSpace(part), "=")
		if action, _, ok2 := strings.Cut(spec, ":"); ok && ok2 {
			out[point+"."+action] = 0
		}
	}
	if s.dlqEvery > 0 {
		out["execute.start.error@workload"] = 0
	}
	s.scanLog("functions.log", func(i int, line []byte) {
		if i < from["functions.log"] || !bytes.Contains(line, []byte(`"fault_injected"`)) {
			return
		}
		var l struct{ Point, Action, Scope string }
		if json.Unmarshal(line, &l) == nil && l.Point != "" {
			k := l.Point + "." + l.Action
			if l.Scope == "workload" {
				k += "@workload"
			}
			out[k]++
		}
	})
	for _, lf := range []struct{ file, what, match string }{
		{"bridge.log", "pubsub.duplicate", "duplicate delivery"},
		{"cloudtasks.log", "cloudtasks.duplicate", "duplicate delivery"},
		{"bridge.log", "pubsub.delay", "chaos delayed delivery"},
		{"cloudtasks.log", "cloudtasks.delay", `"msg":"dispatch attempt"`},
	} {
		s.scanLog(lf.file, func(i int, line []byte) {
			if i >= from[lf.file] && bytes.Contains(line, []byte(lf.match)) {
				out[lf.what]++
			}
		})
	}
	if os.Getenv("NOETL_DELIVERY_CHAOS") == "" || os.Getenv("NOETL_DELIVERY_CHAOS") == "0" {
		out["pubsub.delay"], out["cloudtasks.delay"] = 0, 0
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
