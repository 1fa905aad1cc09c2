package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// adminTok is the test authenticator's static token (principal "token",
// an admin unless the fixture says otherwise).
const adminTok = "admin-token-0123456789abcdef"

// requiredRole is the api's role table for the routes the console uses.
func requiredRole(method, path string) (auth.Role, bool) {
	switch {
	case strings.HasPrefix(path, "/dlq"):
		return auth.Admin, false
	case method == http.MethodPost:
		return auth.Runner, false
	}
	return auth.Viewer, false
}

// fakeAPI is the api as the console sees it: canned answers, the role
// table enforced, every call recorded.
type fakeAPI struct {
	mu       sync.Mutex
	statuses map[string]*inspect.Status
	sources  map[string]string
	events   map[string][]types.Event
	list     []store.ExecutionSummary
	dlq      []store.DLQEntry
	cost     inspect.Cost
	ops      map[string]float64
	calls    []string
	// eventReads counts Events calls.
	eventReads int
	// rerunRefusal, when set, is the api's 409 to a rerun.
	rerunRefusal string
	// stored are the results Result loads, by key (readable by the
	// execution whose id starts the key).
	stored map[string]any
}

func (f *fakeAPI) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeAPI) called(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func answer(code int, v any) (int, []byte) {
	b, _ := json.Marshal(v)
	return code, b
}

func (f *fakeAPI) Call(ctx context.Context, method, path string, body []byte) (int, []byte) {
	f.record(method + " " + path + " " + string(body))
	u, _ := url.Parse(path)
	need, _ := requiredRole(method, u.Path)
	p, ok := auth.PrincipalOf(ctx)
	if !ok {
		return answer(401, map[string]any{"error": "auth: unauthenticated"})
	}
	if p.Role < need {
		return answer(403, map[string]any{"error": "auth: forbidden: " + p.Name + " has role " + p.Role.String()})
	}
	switch {
	case method == "GET" && u.Path == "/executions":
		if s := u.Query().Get("status"); s == "bogus" {
			return answer(400, map[string]any{"error": `status "bogus" is not an execution status`})
		}
		counts := map[string]int{}
		for _, e := range f.list {
			counts[string(e.Status)]++
		}
		return answer(200, map[string]any{"executions": f.list, "counts": counts})
	case method == "GET" && strings.HasSuffix(u.Path, "/cost"):
		return answer(200, f.cost)
	case method == "GET" && strings.HasPrefix(u.Path, "/executions/"):
		st := f.statuses[strings.TrimPrefix(u.Path, "/executions/")]
		if st == nil {
			return answer(404, map[string]any{"error": "execution not found"})
		}
		return answer(200, st)
	case method == "POST" && strings.HasSuffix(u.Path, "/cancel"):
		return answer(202, map[string]any{"status": "canceled"})
	case method == "POST" && strings.HasSuffix(u.Path, "/rerun"):
		if f.rerunRefusal != "" {
			return answer(409, map[string]any{"error": f.rerunRefusal})
		}
		return answer(202, map[string]any{"execution_id": "r1", "status": "requested"})
	case method == "GET" && u.Path == "/dlq":
		return answer(200, map[string]any{"entries": f.dlq})
	case method == "GET" && strings.HasPrefix(u.Path, "/dlq/"):
		for _, e := range f.dlq {
			if "/dlq/"+e.MessageID == u.Path {
				return answer(200, e)
			}
		}
		return answer(404, map[string]any{"error": "dlq entry not found"})
	case method == "POST" && strings.HasPrefix(u.Path, "/dlq/"):
		return answer(200, map[string]any{"status": "ok"})
	}
	return answer(404, map[string]any{"error": "no route"})
}

func (f *fakeAPI) Source(ctx context.Context, id string) (string, error) {
	if src, ok := f.sources[id]; ok {
		return src, nil
	}
	return "", &Error{404, "execution " + id + " not found"}
}

func (f *fakeAPI) Result(ctx context.Context, id string, ref any) (any, error) {
	m, _ := ref.(map[string]any)
	inner, _ := m["$ref"].(map[string]any)
	if v, ok := f.stored[fmt.Sprint(inner["key"])]; ok && strings.HasPrefix(fmt.Sprint(inner["key"]), id+"/") {
		return v, nil
	}
	return nil, &Error{404, "result not found"}
}

func (f *fakeAPI) Events(ctx context.Context, id string) ([]types.Event, map[string]float64, error) {
	f.mu.Lock()
	f.eventReads++
	f.mu.Unlock()
	return f.events[id], f.ops, nil
}

// fixture is a console over a fakeAPI.
type fixture struct {
	t   *testing.T
	api *fakeAPI
	h   *Handler
	now time.Time
}

func newFixture(t *testing.T) *fixture { return newFixtureRoles(t, "admin: [token]\n") }

// newFixtureRoles is a fixture whose roles file is rolesYAML.
func newFixtureRoles(t *testing.T, rolesYAML string) *fixture {
	t.Helper()
	roles, err := auth.ParseRoles([]byte(rolesYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{Token: adminTok, Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sign.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, api: &fakeAPI{statuses: map[string]*inspect.Status{}, sources: map[string]string{}, events: map[string][]types.Event{}},
		now: time.Date(2026, 11, 26, 12, 0, 10, 0, time.UTC)}
	f.h = New(Config{
		Backend:       f.api,
		Authenticator: func(context.Context) (*auth.Authenticator, error) { return a, nil },
		Signer:        func(context.Context) (*sign.Signer, error) { return s, nil },
		RequiredRole:  requiredRole,
		DetailUnits:   100,
		Log:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:           func() time.Time { return f.now },
	})
	return f
}

// do serves one request; opts set headers ("Name: value") or cookies
// ("cookie=value").
func (f *fixture) do(method, target, body string, opts ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, o := range opts {
		if k, v, ok := strings.Cut(o, ": "); ok {
			r.Header.Set(k, v)
		} else if k, v, ok := strings.Cut(o, "="); ok {
			r.AddCookie(&http.Cookie{Name: k, Value: v})
		}
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the anti-forgery token of a page's forms.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf token in the page")
	}
	return m[1]
}

func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == CookieName && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie set: %v", w.Header()["Set-Cookie"])
	return nil
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	// Anonymous: to the login form, remembering the page.
	w := f.do("GET", "/console/executions/x1?page=2", "")
	if w.Code != 303 || w.Header().Get("Location") != "/console/login?next="+url.QueryEscape("/console/executions/x1?page=2") {
		t.Fatalf("anonymous: %d %s", w.Code, w.Header().Get("Location"))
	}
	if w := f.do("POST", "/console/executions/x1/cancel", "csrf=x"); w.Code != 401 || len(f.api.called("POST")) != 0 {
		t.Fatalf("anonymous POST: %d, calls %v", w.Code, f.api.calls)
	}
	w = f.do("GET", "/console/login?next=/console/executions/x1", "")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `type="password" id="token" name="token"`) || !strings.Contains(w.Body.String(), `<label for="token">`) {
		t.Fatalf("login form: %d %s", w.Code, w.Body)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	// A wrong token: 401, no cookie, the token not echoed.
	w = f.do("POST", "/console/login", "token=wrong-token-42&next=/console/")
	if w.Code != 401 || len(w.Result().Cookies()) != 0 || strings.Contains(w.Body.String(), "wrong-token-42") || !strings.Contains(w.Body.String(), "not accepted") {
		t.Fatalf("bad login: %d %v %s", w.Code, w.Result().Cookies(), w.Body)
	}
	if w := f.do("POST", "/console/login", "token=&next=/console/"); w.Code != 400 {
		t.Fatalf("empty token: %d", w.Code)
	}
	// A cross-site POST of the form is refused before the token is looked at.
	if w := f.do("POST", "/console/login", "token="+adminTok, "Sec-Fetch-Site: cross-site"); w.Code != 403 || len(w.Result().Cookies()) != 0 {
		t.Fatalf("cross-site login: %d", w.Code)
	}
	// The right token: a sealed, HttpOnly, SameSite=Strict cookie scoped
	// to the console, then back to the page.
	w = f.do("POST", "/console/login", "token="+adminTok+"&next="+url.QueryEscape("/console/executions/x1"))
	if w.Code != 303 || w.Header().Get("Location") != "/console/executions/x1" {
		t.Fatalf("login: %d %s", w.Code, w.Header().Get("Location"))
	}
	c := sessionCookie(t, w)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/console/" || strings.Contains(c.Value, adminTok) {
		t.Fatalf("cookie %+v", c)
	}
	if w := f.do("GET", "/console/", "", CookieName+"="+c.Value); w.Code != 200 || !strings.Contains(w.Body.String(), "Log out") {
		t.Fatalf("with the session: %d", w.Code)
	}
	// A tampered or foreign cookie is dropped: back to the login form.
	if w := f.do("GET", "/console/", "", CookieName+"="+c.Value[:len(c.Value)-4]+"AAAA"); w.Code != 303 {
		t.Fatalf("tampered cookie: %d", w.Code)
	}
	// The session expires.
	f.now = f.now.Add(DefaultSessionTTL + time.Second)
	if w := f.do("GET", "/console/", "", CookieName+"="+c.Value); w.Code != 303 {
		t.Fatalf("expired session: %d", w.Code)
	}
	// Over https (Cloud Run's front end says so), the cookie is Secure;
	// behind the local host's /api prefix, its path is the prefixed one.
	w = f.do("POST", "/console/login", "token="+adminTok, "X-Forwarded-Proto: https", "X-Forwarded-Prefix: /api")
	if c := sessionCookie(t, w); !c.Secure || c.Path != "/api/console/" || w.Header().Get("Location") != "/api/console/" {
		t.Fatalf("https login: cookie %+v, location %s", c, w.Header().Get("Location"))
	}
	// next never leaves the console.
	for _, next := range []string{"https://evil.example/", "//evil.example/console/", "/console/../../x", "/elsewhere", "/console/login"} {
		w := f.do("POST", "/console/login", "token="+adminTok+"&next="+url.QueryEscape(next))
		if loc := w.Header().Get("Location"); loc != "/console/" {
			t.Errorf("next %q: redirected to %q", next, loc)
		}
	}
	// A forwarded prefix that is not a plain path is ignored.
	if w := f.do("GET", "/console/login", "", `X-Forwarded-Prefix: /x"><script>`); strings.Contains(w.Body.String(), "<script>") {
		t.Error("a hostile forwarded prefix reached the page")
	}
}

func TestHeaderAuth(t *testing.T) {
	f := newFixture(t)
	if w := f.do("GET", "/console/", "", "Authorization: Bearer "+adminTok); w.Code != 200 || strings.Contains(w.Body.String(), "Log out") {
		t.Fatalf("bearer: %d", w.Code)
	}
	w := f.do("GET", "/console/", "", "Authorization: Bearer nope")
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("bad bearer: %d %v", w.Code, w.Header())
	}
}

// sampleExecution registers a small execution: a step, then a loop of
// three iterations (one failed after a retry), hostile text in its
// payloads, description and results.
func (f *fixture) sampleExecution(id string, status types.Status) {
	const hostile = `<img src=x onerror=alert(1)>`
	f.api.sources[id] = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: sample}
workflow:
  - step: start
    desc: "` + hostile + `"
    tool: {kind: noop}
    next:
      arcs:
        - step: fan
          when: "{{ '` + hostile + `' != '' }}"
  - step: fan
    loop:
      in: [1, 2, 3]
      iterator: n
      spec: {mode: parallel, max_in_flight: 2}
    tool: {kind: python, code: "result = 1"}
`
	e := func(i int, typ types.EventType, step string, task string, attempt, iteration int, status types.Status, ms int, payload map[string]any) types.Event {
		ev := types.Event{EventID: fmt.Sprint("e", i), EventType: typ, Seq: int64(i), Step: step, StepRun: 1, Task: task, Attempt: attempt, Status: status,
			Timestamp: types.EventTimeOf(f.now.Add(time.Duration(ms-10000) * time.Millisecond)), Payload: payload}
		if step == "" {
			ev.StepRun = 0
		}
		if iteration >= 0 {
			ev.Iteration = types.IntPtr(iteration)
		}
		return ev
	}
	boom := map[string]any{"error": map[string]any{"kind": "python", "message": hostile}}
	f.api.events[id] = []types.Event{
		e(1, types.EvPlaybookStarted, "", "", 0, -1, "", 0, map[string]any{"note": hostile}),
		e(2, types.EvStepScheduled, "start", "", 0, -1, "", 1, nil),
		e(3, types.EvStepStarted, "start", "", 0, -1, "", 2, nil),
		e(4, types.EvTaskAttemptStarted, "start", "start_task", 1, -1, "", 2, nil),
		e(5, types.EvTaskAttemptDone, "start", "start_task", 1, -1, types.StatusOK, 3, nil),
		e(6, types.EvStepDone, "start", "", 0, -1, types.StatusOK, 4, nil),
		e(7, types.EvNextEvaluated, "start", "", 0, -1, "", 4, map[string]any{"fired": []any{"fan"}}),
		e(8, types.EvLoopStarted, "fan", "", 0, -1, "", 5, map[string]any{"total": int64(3), "mode": "parallel", "max_in_flight": int64(2)}),
		e(9, types.EvLoopIterationStarted, "fan", "", 0, 0, "", 6, nil),
		e(10, types.EvTaskAttemptStarted, "fan", "fan_task", 1, 0, "", 6, nil),
		e(11, types.EvTaskAttemptDone, "fan", "fan_task", 1, 0, types.StatusOK, 50, nil),
		e(12, types.EvLoopIterationDone, "fan", "", 0, 0, types.StatusOK, 51, nil),
		e(13, types.EvLoopIterationStarted, "fan", "", 0, 1, "", 6, nil),
		e(14, types.EvTaskAttemptStarted, "fan", "fan_task", 1, 1, "", 6, nil),
		e(15, types.EvTaskAttemptFailed, "fan", "fan_task", 1, 1, types.StatusError, 20, boom),
		e(16, types.EvPolicyTaskEvaluated, "fan", "fan_task", 1, 1, "", 20, map[string]any{"do": "retry", "delay_s": 0.5}),
		e(17, types.EvTaskAttemptStarted, "fan", "fan_task", 2, 1, "", 520, nil),
		e(18, types.EvTaskAttemptFailed, "fan", "fan_task", 2, 1, types.StatusError, 530, boom),
		e(19, types.EvLoopIterationFailed, "fan", "", 0, 1, types.StatusError, 531, boom),
		e(20, types.EvLoopIterationStarted, "fan", "", 0, 2, "", 52, nil),
		e(21, types.EvTaskAttemptStarted, "fan", "fan_task", 1, 2, "", 52, nil),
	}
	st := &inspect.Status{ExecutionID: id, Playbook: "sample", Status: status, CreatedAt: f.now.Add(-10 * time.Second),
		StartedAt: f.now.Add(-10 * time.Second), DurationMS: 10000, Version: 3,
		Steps: map[string]inspect.Step{
			"start": {Status: types.StatusOK, Run: 1, Runs: 1, DurationMS: 2},
			"fan":   {Status: types.StatusRunning, Run: 1, Loop: &inspect.Loop{Total: 3, Done: 2, Mode: "parallel", MaxInFlight: 2}},
		},
		Results: map[string]any{"start": map[string]any{"html": hostile},
			"big": map[string]any{"$ref": map[string]any{"uri": "noetl://default/default/results/" + id + "/big/1/0/1", "key": "k.feather", "format": "feather", "bytes": int64(123456), "rows": int64(1000)}}},
	}
	if status != types.StatusRunning {
		st.FinishedAt = f.now
		f.api.events[id] = append(f.api.events[id],
			e(22, types.EvLoopIterationCanceled, "fan", "", 0, 2, types.StatusCanceled, 9000, nil),
			e(23, types.EvPlaybookFinished, "", "", 0, -1, status, 10000, nil))
	}
	f.api.statuses[id] = st
	f.api.cost = inspect.Cost{ExecutionID: id, Steps: 4, USDTotal: 0.000123, Lines: []meter.Line{{Service: "firestore", Kind: "read", Count: 10, USD: 0.000003}}}
	f.api.ops = map[string]float64{"firestore.write": 1000}
}

func TestExecutionPage(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusRunning)
	f.api.dlq = []store.DLQEntry{{MessageID: "d1", ExecutionID: "x1", StepID: "fan", Status: store.DLQPending, LastError: "boom"}, {MessageID: "d2", ExecutionID: "other", Status: store.DLQPending}}
	w := f.do("GET", "/console/executions/x1", "", "Authorization: Bearer "+adminTok)
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, body)
	}
	if strings.Contains(body, "<img src=x") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("hostile text was not escaped (or is missing)")
	}
	for _, want := range []string{
		`data-step="start" data-status="ok"`, `data-step="fan" data-status="running"`, // the graph, by status
		`class="edge taken`,                       // the arc start → fan fired
		`data-iterations="3"`, `data-retried="1"`, // the timeline's figures
		`data-kind="backoff"`,                          // the retry's backoff
		`id="step-fan"`, `<progress value="2" max="3"`, // loop progress
		"noetl://default/default/results/x1/big/1/0/1", "120.6 KiB", // a reference: URN, size
		"python",                                              // the failure kind
		`href="/console/executions/x1/cancel"`, `id="cancel"`, // running, admin: cancel (confirmed on its page)
		`href="/console/dlq/d1"`, `action="/console/dlq/d1/replay"`, // this execution's DLQ entry
		"0.00090000",         // cost: 1,000 writes at $0.09 per 100,000
		`data-follow="2000"`, // followed while running, every 2 s
		"21 events",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, `href="/console/dlq/d2"`) {
		t.Error("another execution's DLQ entry is listed")
	}
	if n := strings.Count(body, `data-index="`); n != 3 {
		t.Errorf("%d iteration bars, want 3", n)
	}
	if w.Header().Get("Server-Timing") == "" {
		t.Error("no Server-Timing header")
	}
	// A viewer: the same page, no actions.
	vf := newFixtureRoles(t, "viewer: [token]\n")
	vf.sampleExecution("x1", types.StatusRunning)
	vw := vf.do("GET", "/console/executions/x1", "", "Authorization: Bearer "+adminTok)
	if vw.Code != 200 || strings.Contains(vw.Body.String(), `id="cancel"`) || strings.Contains(vw.Body.String(), "/dlq") {
		t.Errorf("viewer page: %d, cancel or DLQ shown", vw.Code)
	}
	// Ended: not followed, no cancel.
	f.sampleExecution("x2", types.StatusFailed)
	ew := f.do("GET", "/console/executions/x2", "", "Authorization: Bearer "+adminTok)
	if strings.Contains(ew.Body.String(), "data-follow") || strings.Contains(ew.Body.String(), `id="cancel"`) {
		t.Error("an ended execution is followed or cancelable")
	}
	// Ended in the state, but the batch with its end not yet in the log:
	// still followed, or the page would stop short of playbook.finished.
	f.sampleExecution("x3", types.StatusOK)
	f.api.events["x3"] = f.api.events["x3"][:len(f.api.events["x3"])-1]
	for _, path := range []string{"/console/executions/x3", "/console/executions/x3/events"} {
		w := f.do("GET", path, "", "Authorization: Bearer "+adminTok)
		if !strings.Contains(w.Body.String(), "data-follow") {
			t.Errorf("%s: an execution whose log lacks its end is no longer followed", path)
		}
		if strings.Contains(w.Body.String(), `id="cancel"`) {
			t.Errorf("%s: an ended execution offers cancel while its page follows the log", path)
		}
	}
	// Ended, its end in the log, but a batch of an ok loop's iteration
	// still on its way (batches land in any order): still followed, for
	// at most LogSettle after the end.
	f.sampleExecution("x4", types.StatusOK)
	f.api.statuses["x4"].Steps["fan"] = inspect.Step{Status: types.StatusOK, Run: 1, Runs: 1, Loop: &inspect.Loop{Total: 3, Done: 3, Mode: "parallel", MaxInFlight: 2}}
	whole := append(f.api.events["x4"], types.Event{EventID: "fan-done", EventType: types.EvStepDone, Step: "fan", StepRun: 1, Status: types.StatusOK})
	var partial []types.Event
	for _, ev := range whole {
		if ev.Iteration == nil || *ev.Iteration != 0 {
			partial = append(partial, ev)
		}
	}
	for _, c := range []struct {
		name   string
		evs    []types.Event
		ended  time.Time
		follow bool
	}{
		{"the whole log", whole, f.now, false},
		{"iteration 0's batch missing", partial, f.now, true},
		{"iteration 0's batch missing past LogSettle", partial, f.now.Add(-LogSettle - time.Second), false},
	} {
		f.api.events["x4"] = c.evs
		f.api.statuses["x4"].FinishedAt = c.ended
		for _, path := range []string{"/console/executions/x4", "/console/executions/x4/events"} {
			w := f.do("GET", path, "", "Authorization: Bearer "+adminTok)
			if got := strings.Contains(w.Body.String(), "data-follow"); got != c.follow {
				t.Errorf("%s, %s: followed %v, want %v", c.name, path, got, c.follow)
			}
		}
	}
	// Unknown: the api's 404.
	if w := f.do("GET", "/console/executions/nope", "", "Authorization: Bearer "+adminTok); w.Code != 404 || !strings.Contains(w.Body.String(), "not found") {
		t.Errorf("unknown execution: %d", w.Code)
	}
}

// Large executions are drawn from the state and the loops' profiles:
// the events are not read, and the page stays small whatever the
// number of iterations.
func TestSummaryMode(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("big", types.StatusOK)
	ended := make([]int, engine.ProfileBuckets)
	for i := range ended {
		ended[i] = 100000 / engine.ProfileBuckets
	}
	prof := &engine.LoopProfile{FirstUS: f.now.Add(-9 * time.Second).UnixMicro(), LastUS: f.now.UnixMicro(), Ended: ended}
	st := f.api.statuses["big"]
	st.Steps["fan"] = inspect.Step{Status: types.StatusOK, Run: 1, Runs: 1, StartedAt: f.now.Add(-9500 * time.Millisecond),
		FinishedAt: f.now, Loop: &inspect.Loop{Total: 100000, Done: 100000, Mode: "parallel", MaxInFlight: 200, Profile: prof}}
	w := f.do("GET", "/console/executions/big", "", "Authorization: Bearer "+adminTok)
	body := w.Body.String()
	if w.Code != 200 || f.api.eventReads != 0 || len(f.api.called("GET /executions/big/cost")) != 0 {
		t.Fatalf("%d; events read %d times, cost %v", w.Code, f.api.eventReads, f.api.called("GET /executions/big/cost"))
	}
	if n := strings.Count(body, `data-kind="density"`); n != engine.ProfileBuckets {
		t.Errorf("%d density bars, want %d", n, engine.ProfileBuckets)
	}
	if !strings.Contains(body, `data-iterations="99960"`) || !strings.Contains(body, "?detail=all") || !strings.Contains(body, "/executions/big/events") {
		t.Error("the summary lacks the iteration count or the links to the events and the details")
	}
	if !strings.Contains(body, `class="edge unknown`) || strings.Contains(body, `class="edge taken`) || strings.Contains(body, `class="edge idle`) {
		t.Error("summary mode: an arc is drawn as taken or not taken without its events")
	}
	if len(body) > 200<<10 {
		t.Errorf("the page is %d bytes", len(body))
	}
	// ?detail=all reads the events anyway.
	if w := f.do("GET", "/console/executions/big?detail=all", "", "Authorization: Bearer "+adminTok); w.Code != 200 || f.api.eventReads != 1 {
		t.Errorf("detail=all: %d, events read %d times", w.Code, f.api.eventReads)
	}
}

func TestActionsNeedTheFormToken(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusRunning)
	login := f.do("POST", "/console/login", "token="+adminTok)
	cookie := CookieName + "=" + sessionCookie(t, login).Value
	page := f.do("GET", "/console/executions/x1/cancel", "", cookie).Body.String()
	tok := csrfOf(t, page)
	for name, c := range map[string]struct {
		body string
		opts []string
	}{
		"no token":    {"reason=r", []string{cookie}},
		"wrong token": {"reason=r&csrf=v1=AAAA", []string{cookie}},
		"cross-site":  {"reason=r&csrf=" + url.QueryEscape(tok), []string{cookie, "Sec-Fetch-Site: cross-site"}},
		"same-site":   {"reason=r&csrf=" + url.QueryEscape(tok), []string{cookie, "Sec-Fetch-Site: same-site"}},
	} {
		if w := f.do("POST", "/console/executions/x1/cancel", c.body, c.opts...); w.Code != 403 {
			t.Errorf("%s: %d", name, w.Code)
		}
	}
	if calls := f.api.called("POST"); len(calls) != 0 {
		t.Fatalf("refused forms reached the api: %v", calls)
	}
	// Another session's token does not work in this one.
	other := f.do("POST", "/console/login", "token="+adminTok)
	otherCookie := CookieName + "=" + sessionCookie(t, other).Value
	if w := f.do("POST", "/console/executions/x1/cancel", "csrf="+url.QueryEscape(tok), otherCookie); w.Code != 403 {
		t.Errorf("a token of another session: %d", w.Code)
	}
	w := f.do("POST", "/console/executions/x1/cancel", "reason=stuck&csrf="+url.QueryEscape(tok), cookie, "Sec-Fetch-Site: same-origin")
	if w.Code != 303 || w.Header().Get("Location") != "/console/executions/x1" {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	if calls := f.api.called("POST /executions/x1/cancel"); len(calls) != 1 || !strings.Contains(calls[0], `"reason":"stuck"`) {
		t.Fatalf("cancel calls %v", calls)
	}
	// Header callers (gcloud run services proxy) need the token too.
	hdr := "Authorization: Bearer " + adminTok
	htok := csrfOf(t, f.do("GET", "/console/executions/x1/cancel", "", hdr).Body.String())
	if w := f.do("POST", "/console/executions/x1/cancel", "", hdr); w.Code != 403 {
		t.Errorf("header caller without the token: %d", w.Code)
	}
	if w := f.do("POST", "/console/executions/x1/cancel", "csrf="+url.QueryEscape(htok), hdr); w.Code != 303 {
		t.Errorf("header caller with the token: %d", w.Code)
	}
	// Log out: the cookie is cleared.
	w = f.do("POST", "/console/logout", "csrf="+url.QueryEscape(tok), cookie)
	if w.Code != 303 || !strings.Contains(strings.Join(w.Header()["Set-Cookie"], ";"), "Max-Age=0") {
		t.Errorf("logout: %d %v", w.Code, w.Header()["Set-Cookie"])
	}
}

func TestRoleRefusals(t *testing.T) {
	f := newFixtureRoles(t, "viewer: [token]\n")
	f.sampleExecution("x1", types.StatusRunning)
	hdr := "Authorization: Bearer " + adminTok
	// A viewer's session (its log-out form carries the token).
	login := f.do("POST", "/console/login", "token="+adminTok)
	cookie := CookieName + "=" + sessionCookie(t, login).Value
	tok := csrfOf(t, f.do("GET", "/console/", "", cookie).Body.String())
	// The api refuses a viewer's cancel: the console shows its 403.
	if w := f.do("POST", "/console/executions/x1/cancel", "csrf="+url.QueryEscape(tok), cookie); w.Code != 403 || !strings.Contains(w.Body.String(), "has role viewer") {
		t.Errorf("viewer cancel: %d %s", w.Code, w.Body)
	}
	if w := f.do("GET", "/console/dlq", "", hdr); w.Code != 403 {
		t.Errorf("viewer DLQ: %d", w.Code)
	}
}

func TestListPages(t *testing.T) {
	f := newFixture(t)
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for i := range PageSize {
		st := types.StatusOK
		if i == 3 {
			st = types.StatusRunning
		}
		f.api.list = append(f.api.list, store.ExecutionSummary{ExecutionID: fmt.Sprintf("e%02d", i), Playbook: "p", Status: st,
			CreatedAt: base.Add(-time.Duration(i) * time.Minute), UpdatedAt: base.Add(-time.Duration(i)*time.Minute + 1500*time.Millisecond)})
	}
	hdr := "Authorization: Bearer " + adminTok
	w := f.do("GET", "/console/?status=ok&playbook=p", "", hdr)
	body := w.Body.String()
	if w.Code != 200 || strings.Count(body, `href="/console/executions/e`) != PageSize || !strings.Contains(body, "1.5s") || !strings.Contains(body, "data-follow") {
		t.Fatalf("list: %d", w.Code)
	}
	calls := f.api.called("GET /executions?")
	if len(calls) != 1 || !strings.Contains(calls[0], "status=ok") || !strings.Contains(calls[0], "playbook=p") || !strings.Contains(calls[0], "limit=50") {
		t.Fatalf("api query %v", calls)
	}
	last := f.api.list[PageSize-1]
	next := "/console/?" + url.Values{"status": {"ok"}, "playbook": {"p"}, "before": {last.CreatedAt.Format(time.RFC3339Nano) + "," + last.ExecutionID}}.Encode()
	if !strings.Contains(body, `href="`+strings.ReplaceAll(next, "&", "&amp;")+`"`) {
		t.Fatalf("no link to the next page %s", next)
	}
	f.do("GET", next, "", hdr)
	if calls := f.api.called("GET /executions?"); len(calls) != 2 || !strings.Contains(calls[1], "before="+url.QueryEscape(last.CreatedAt.Format(time.RFC3339Nano)+","+last.ExecutionID)) {
		t.Fatalf("second page query %v", calls)
	}
	if w := f.do("GET", "/console/?status=bogus", "", hdr); w.Code != 400 || !strings.Contains(w.Body.String(), "not an execution status") {
		t.Errorf("bad filter: %d", w.Code)
	}
}

func TestDLQPages(t *testing.T) {
	f := newFixture(t)
	f.api.dlq = []store.DLQEntry{{MessageID: "d1", ExecutionID: "x1", StepID: "s", Status: store.DLQPending, Payload: `{"args":{"password":"***"}}`, LastError: "<b>boom</b>"},
		{MessageID: "d2", ExecutionID: "x1", Status: store.DLQDiscarded}}
	hdr := "Authorization: Bearer " + adminTok
	w := f.do("GET", "/console/dlq", "", hdr)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/console/dlq/d1/replay"`) || strings.Contains(w.Body.String(), `action="/console/dlq/d2/replay"`) || strings.Contains(w.Body.String(), "<b>boom") {
		t.Fatalf("dlq list: %d", w.Code)
	}
	w = f.do("GET", "/console/dlq/d1", "", hdr)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `&#34;password&#34;: &#34;***&#34;`) {
		t.Fatalf("dlq entry: %d %s", w.Code, w.Body)
	}
	tok := csrfOf(t, w.Body.String())
	if w := f.do("POST", "/console/dlq/d1/discard", "csrf="+url.QueryEscape(tok), hdr); w.Code != 400 || len(f.api.called("POST")) != 0 {
		t.Errorf("discard without a reason: %d", w.Code)
	}
	if w := f.do("POST", "/console/dlq/d1/discard", "reason=bad+data&execution=x1&csrf="+url.QueryEscape(tok), hdr); w.Code != 303 || w.Header().Get("Location") != "/console/executions/x1#dlq" {
		t.Errorf("discard: %d %s", w.Code, w.Header().Get("Location"))
	}
	if w := f.do("POST", "/console/dlq/d1/replay", "csrf="+url.QueryEscape(tok), hdr); w.Code != 303 || w.Header().Get("Location") != "/console/dlq/d1" {
		t.Errorf("replay: %d", w.Code)
	}
	calls := f.api.called("POST")
	if len(calls) != 2 || !strings.HasPrefix(calls[0], `POST /dlq/d1/discard {"reason":"bad data"}`) || !strings.HasPrefix(calls[1], "POST /dlq/d1/replay") {
		t.Errorf("dlq calls %v", calls)
	}
	if w := f.do("GET", "/console/dlq/nope", "", hdr); w.Code != 404 {
		t.Errorf("unknown entry: %d", w.Code)
	}
}

func TestStaticAndRoutes(t *testing.T) {
	f := newFixture(t)
	for path, ctype := range map[string]string{"/console/static/console.css": "text/css", "/console/static/console.js": "text/javascript"} {
		w := f.do("GET", path, "")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) || w.Body.Len() == 0 {
			t.Errorf("%s: %d %s", path, w.Code, w.Header().Get("Content-Type"))
		}
	}
	for _, p := range []string{"/console/static/", "/console/static/nope.css"} {
		if w := f.do("GET", p, ""); w.Code != 404 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
	// A path that is not clean is redirected to its clean form (ServeMux),
	// never served.
	if w := f.do("GET", "/console/static/../console.go", ""); w.Code == 200 || strings.Contains(w.Body.String(), "package console") {
		t.Errorf("/console/static/../console.go: %d", w.Code)
	}
	if w := f.do("GET", "/console", ""); w.Code != 303 || w.Header().Get("Location") != "/console/" {
		t.Errorf("/console: %d %s", w.Code, w.Header().Get("Location"))
	}
	if w := f.do("GET", "/console/nowhere", "", "Authorization: Bearer "+adminTok); w.Code != 404 {
		t.Errorf("unknown page: %d", w.Code)
	}
	if !IsPath("/console/") || !IsPath("/api/console") || IsPath("/consoles") || IsPath("/executions") {
		t.Error("IsPath")
	}
}
