package console

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// withLogs adds to the sample execution's events an attempt of start with
// a long log (with terminal control sequences) and its rendered input,
// and a failed attempt of iteration 1 with its own log.
func (f *fixture) withLogs(id string) (longLog string) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "line %02d of the task's print output\n", i)
	}
	b.WriteString("evil: \x1b[31mred\x1b[0m \x07 \u202egnp.exe\n")
	longLog = b.String()
	evs := f.api.events[id]
	for i, e := range evs {
		switch {
		case e.EventType == types.EvTaskAttemptDone && e.Step == "start":
			evs[i].Payload = map[string]any{"kind": "python", "logs": longLog, "input": `{"args":{"n":1},"config":{"code":"(10 bytes: see the step's source)"}}`}
		case e.EventType == types.EvTaskAttemptFailed && e.Attempt == 2:
			evs[i].Payload = map[string]any{"kind": "python", "logs": "iteration one's output", "error": map[string]any{"kind": "python", "message": "boom", "retryable": false, "status": int64(0)}}
		}
	}
	return longLog
}

// The step inspector: an attempt's whole log (the events table cuts
// payloads at 180 characters), its rendered input, the step's source,
// escaped control characters; a loop's iterations with the attempts of
// the first failed one; runs and unknown steps.
func TestStepInspector(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusFailed)
	longLog := f.withLogs("x1")
	hdr := "Authorization: Bearer " + adminTok
	w := f.do("GET", "/console/executions/x1/steps/start", "", hdr)
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, body)
	}
	if !strings.Contains(body, "line 39 of the task&#39;s print output") || !strings.Contains(body, "line 00 of the task") {
		t.Error("the whole log is not shown")
	}
	if strings.ContainsAny(body, "\x1b\x07\u202e") || !strings.Contains(body, `\x1b[31mred\x1b[0m \x07 \u202egnp.exe`) {
		t.Error("control characters of the log reached the page unescaped")
	}
	for _, want := range []string{`&#34;n&#34;: 1`, "(10 bytes: see the step&#39;s source)", // the input, indented
		`<span class="ln">   5</span>   - step: start`, `<span class="ln">   7</span>     tool: {kind: noop}`, // the source, numbered
		`<span class="ln">  10</span>         - step: fan`,
		`href="/console/executions/x1/events?step=start"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the inspector lacks %q", want)
		}
	}
	if strings.Contains(body, "loop:") || strings.Contains(body, `<span class="ln">  12</span>`) {
		t.Error("the source shows the next step too")
	}
	// The events table still cuts its payloads (the inspector is where a
	// log is read whole).
	if ev := f.do("GET", "/console/executions/x1/events", "", hdr).Body.String(); strings.Contains(ev, "line 39") {
		t.Error("the events table shows the whole log")
	}
	_ = longLog
	// A loop: its iterations, the attempts of the first failed one.
	w = f.do("GET", "/console/executions/x1/steps/fan", "", hdr)
	body = w.Body.String()
	if w.Code != 200 || !strings.Contains(body, "Iterations (3)") || !strings.Contains(body, "of iteration 1 (2)") || !strings.Contains(body, "iteration one&#39;s output") {
		t.Errorf("loop inspector: %d\n%s", w.Code, body)
	}
	w = f.do("GET", "/console/executions/x1/steps/fan?iteration=0", "", hdr)
	if !strings.Contains(w.Body.String(), "of iteration 0 (1)") {
		t.Error("?iteration=0 does not show iteration 0's attempt")
	}
	if w := f.do("GET", "/console/executions/x1/steps/nope", "", hdr); w.Code != 404 {
		t.Errorf("unknown step: %d", w.Code)
	}
	// The steps table links every step to its inspector.
	if page := f.do("GET", "/console/executions/x1", "", hdr).Body.String(); !strings.Contains(page, `href="/console/executions/x1/steps/fan" class="inspect"`) {
		t.Error("the steps table does not link to the inspector")
	}
}

// Rerun buttons: an ended execution offers "run again", "from the failed
// step" and the form; the form posts the api's rerun and goes to the new
// execution; the api's refusal is shown on the form with what was typed;
// a running execution offers none, nor does a viewer's page.
func TestRerunButtons(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x2", types.StatusFailed)
	st := f.api.statuses["x2"]
	st.Steps["fan"] = st.Steps["fan"]
	fan := st.Steps["fan"]
	fan.Status = types.StatusFailed
	st.Steps["fan"] = fan
	hdr := "Authorization: Bearer " + adminTok
	page := f.do("GET", "/console/executions/x2", "", hdr).Body.String()
	for _, want := range []string{`id="rerun-start"`, `id="rerun-failed"`, `href="/console/executions/x2/rerun?from=failed"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the ended execution's page lacks %s", want)
		}
	}
	tok := csrfOf(t, page)
	form := f.do("GET", "/console/executions/x2/rerun?from=failed", "", hdr).Body.String()
	if !strings.Contains(form, `<option value="failed" selected>`) || !strings.Contains(form, `<option value="fan">step fan</option>`) {
		t.Errorf("rerun form:\n%s", form)
	}
	if w := f.do("POST", "/console/executions/x2/rerun", "from=failed", hdr); w.Code != 403 {
		t.Errorf("rerun without the form token: %d", w.Code)
	}
	w := f.do("POST", "/console/executions/x2/rerun", "from=failed&workload="+url.QueryEscape(`{"max_failed": 2}`)+"&csrf="+url.QueryEscape(tok), hdr)
	if w.Code != 303 || w.Header().Get("Location") != "/console/executions/r1" {
		t.Fatalf("rerun: %d %s", w.Code, w.Header().Get("Location"))
	}
	if calls := f.api.called("POST /executions/x2/rerun"); len(calls) != 1 || !strings.Contains(calls[0], `"from":"failed"`) || !strings.Contains(calls[0], `"workload":{"max_failed":2}`) {
		t.Errorf("rerun calls %v", calls)
	}
	if w := f.do("POST", "/console/executions/x2/rerun", "workload=%5B1%5D&csrf="+url.QueryEscape(tok), hdr); w.Code != 400 || !strings.Contains(w.Body.String(), "not a JSON object") || !strings.Contains(w.Body.String(), "[1]</textarea>") {
		t.Errorf("bad workload: %d", w.Code)
	}
	f.api.rerunRefusal = "rerun: step nope never ran"
	if w := f.do("POST", "/console/executions/x2/rerun", "from=fan&csrf="+url.QueryEscape(tok), hdr); w.Code != 409 || !strings.Contains(w.Body.String(), "step nope never ran") || !strings.Contains(w.Body.String(), `<option value="fan" selected>`) {
		t.Errorf("refused rerun: %d", w.Code)
	}
	f.sampleExecution("x1", types.StatusRunning)
	if page := f.do("GET", "/console/executions/x1", "", hdr).Body.String(); strings.Contains(page, `id="rerun-start"`) {
		t.Error("a running execution offers a rerun")
	}
	vf := newFixtureRoles(t, "viewer: [token]\n")
	vf.sampleExecution("x2", types.StatusFailed)
	if page := vf.do("GET", "/console/executions/x2", "", hdr).Body.String(); strings.Contains(page, "rerun") {
		t.Error("a viewer is offered a rerun")
	}
}

// Cancel is confirmed on its own page: the execution's page links to it,
// the confirmation posts, an ended execution has nothing to confirm.
func TestCancelConfirmation(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusRunning)
	hdr := "Authorization: Bearer " + adminTok
	page := f.do("GET", "/console/executions/x1", "", hdr).Body.String()
	if strings.Contains(page, `action="/console/executions/x1/cancel"`) || !strings.Contains(page, `href="/console/executions/x1/cancel"`) {
		t.Fatal("the execution's page cancels without a confirmation")
	}
	confirm := f.do("GET", "/console/executions/x1/cancel", "", hdr).Body.String()
	if !strings.Contains(confirm, `id="cancel-confirm"`) || !strings.Contains(confirm, `id="cancel-keep"`) || len(f.api.called("POST")) != 0 {
		t.Fatal("the confirmation page")
	}
	f.sampleExecution("x2", types.StatusOK)
	if done := f.do("GET", "/console/executions/x2/cancel", "", hdr).Body.String(); strings.Contains(done, `id="cancel-confirm"`) || !strings.Contains(done, "nothing to cancel") {
		t.Error("an ended execution can be confirmed canceled")
	}
}

// The list: counts per status (links filtering by them), search by id,
// the creator filter (operators), time filters in the visitor's zone,
// creator and rerun_of columns, times as <time> for the script.
func TestListFiltersAndCounts(t *testing.T) {
	f := newFixture(t)
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for i, s := range []types.Status{types.StatusOK, types.StatusFailed, types.StatusFailed, types.StatusRunning} {
		f.api.list = append(f.api.list, store.ExecutionSummary{ExecutionID: fmt.Sprintf("e%d", i), Playbook: "p", Status: s, Creator: "ada",
			CreatedAt: base.Add(-time.Duration(i) * time.Minute), UpdatedAt: base})
	}
	f.api.list[0].RerunOf = "e1"
	hdr := "Authorization: Bearer " + adminTok
	body := f.do("GET", "/console/?playbook=p", "", hdr).Body.String()
	for _, want := range []string{`data-status="failed">failed <span class="n">2</span>`, `href="/console/?playbook=p&amp;status=failed"`, "4 in all that match",
		`<td><a href="/console/executions/e1">e1</a></td>`, `<td>ada</td>`, `<time datetime="2026-11-26T10:00:00Z">2026-11-26 10:00:00Z</time>`,
		`action="/console/search"`, `id="f-creator"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
	if w := f.do("GET", "/console/search?id=+914+", "", hdr); w.Code != 303 || w.Header().Get("Location") != "/console/executions/914" {
		t.Errorf("search: %d %s", w.Code, w.Header().Get("Location"))
	}
	// Within the last 24 hours; from a local time (the browser's offset:
	// 120 minutes west of UTC) to an RFC 3339 one.
	f.do("GET", "/console/?within=24h&creator=ada", "", hdr)
	f.do("GET", "/console/?since=2026-11-26T08:00&until=2026-11-26T12:00:00Z&tz=120", "", hdr)
	calls := f.api.called("GET /executions?")
	if q := calls[len(calls)-2]; !strings.Contains(q, "since="+url.QueryEscape(f.now.Add(-24*time.Hour).Format(time.RFC3339Nano))) || !strings.Contains(q, "creator=ada") || !strings.Contains(q, "counts=true") {
		t.Errorf("within 24h: %s", q)
	}
	if q := calls[len(calls)-1]; !strings.Contains(q, "since=2026-11-26T10%3A00%3A00Z") || !strings.Contains(q, "until=2026-11-26T12%3A00%3A00Z") {
		t.Errorf("since/until: %s", q)
	}
	if w := f.do("GET", "/console/?since=yesterday", "", hdr); w.Code != 400 || !strings.Contains(w.Body.String(), "is not a date and time") {
		t.Errorf("a bad time: %d", w.Code)
	}
	// Below operator, no creator filter (the api would ignore it).
	rf := newFixtureRoles(t, "runner: [token]\n")
	if body := rf.do("GET", "/console/", "", hdr).Body.String(); strings.Contains(body, `id="f-creator"`) {
		t.Error("a runner is offered the creator filter")
	}
	if auth.Runner >= auth.Operator {
		t.Fatal("role order")
	}
}

// The DLQ replay form carries a patch to the api; one that is not a JSON
// object is refused before the api.
func TestDLQReplayPatch(t *testing.T) {
	f := newFixture(t)
	f.api.dlq = []store.DLQEntry{{MessageID: "d1", ExecutionID: "x1", StepID: "s", Status: store.DLQPending}}
	hdr := "Authorization: Bearer " + adminTok
	page := f.do("GET", "/console/dlq/d1", "", hdr).Body.String()
	if !strings.Contains(page, `name="patch"`) {
		t.Fatal("no patch field on the entry's replay")
	}
	tok := csrfOf(t, page)
	if w := f.do("POST", "/console/dlq/d1/replay", "patch="+url.QueryEscape(`["x"]`)+"&csrf="+url.QueryEscape(tok), hdr); w.Code != 400 || len(f.api.called("POST")) != 0 {
		t.Errorf("bad patch: %d", w.Code)
	}
	if w := f.do("POST", "/console/dlq/d1/replay", "patch="+url.QueryEscape(`{"args.limit": 10}`)+"&csrf="+url.QueryEscape(tok), hdr); w.Code != 303 {
		t.Errorf("replay: %d", w.Code)
	}
	if calls := f.api.called("POST /dlq/d1/replay"); len(calls) != 1 || !strings.Contains(calls[0], `{"patch":{"args.limit":10}}`) {
		t.Errorf("replay calls %v", calls)
	}
}

// Display safety: control characters and bidirectional overrides in what
// authors and callers wrote (a playbook's name, a creator, an error) are
// shown escaped on every page, never raw.
func TestControlCharactersAreEscaped(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusFailed)
	hostile := "evil\x1b]0;owned\x07\x1b[2J\u202egnp.exe\u2066x\u009b31m"
	f.api.statuses["x1"].Playbook = hostile
	f.api.statuses["x1"].Failures = []string{"failed: " + hostile}
	f.api.list = []store.ExecutionSummary{{ExecutionID: "x1", Playbook: hostile, Creator: hostile, Status: types.StatusFailed}}
	hdr := "Authorization: Bearer " + adminTok
	for _, path := range []string{"/console/", "/console/executions/x1", "/console/executions/x1/steps/start", "/console/executions/x1/rerun"} {
		body := f.do("GET", path, "", hdr).Body.String()
		if strings.ContainsFunc(body, unsafeRune) {
			t.Errorf("%s: a control character reached the page", path)
		}
		if (path == "/console/" || path == "/console/executions/x1") && !strings.Contains(body, `evil\x1b]0;owned\x07\x1b[2J\u202egnp.exe\u2066x\x9b31m`) {
			t.Errorf("%s: the escaped text is not shown", path)
		}
	}
	if got := safeText("tab\tnew\nline \u00e9 ok"); got != "tab\tnew\nline \u00e9 ok" {
		t.Errorf("safeText changed ordinary text: %q", got)
	}
}

// Forms are refused cross-origin by net/http's CrossOriginProtection:
// the browser's Sec-Fetch-Site, else the Origin against the Host.
func TestCrossOriginProtection(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusRunning)
	hdr := "Authorization: Bearer " + adminTok
	tok := csrfOf(t, f.do("GET", "/console/executions/x1/cancel", "", hdr).Body.String())
	for name, opts := range map[string][]string{
		"cross-site":     {"Sec-Fetch-Site: cross-site"},
		"same-site":      {"Sec-Fetch-Site: same-site"},
		"foreign origin": {"Origin: https://evil.example"},
	} {
		if w := f.do("POST", "/console/executions/x1/cancel", "csrf="+url.QueryEscape(tok), append(opts, hdr)...); w.Code != 403 || !strings.Contains(w.Body.String(), "cross-site request refused") {
			t.Errorf("%s: %d", name, w.Code)
		}
	}
	if calls := f.api.called("POST"); len(calls) != 0 {
		t.Fatalf("refused forms reached the api: %v", calls)
	}
	if w := f.do("POST", "/console/executions/x1/cancel", "csrf="+url.QueryEscape(tok), hdr, "Origin: http://example.com", "Sec-Fetch-Site: same-origin"); w.Code != 303 {
		t.Errorf("same-origin: %d", w.Code)
	}
}

// Dark mode and local time are the page's: the stylesheet has a dark
// scheme, the script turns <time> elements into the visitor's zone.
func TestDarkModeAndLocalTimeAssets(t *testing.T) {
	f := newFixture(t)
	css := f.do("GET", "/console/static/console.css", "").Body.String()
	if !strings.Contains(css, "@media (prefers-color-scheme: dark)") || !strings.Contains(css, "color-scheme: light dark") {
		t.Error("no dark scheme")
	}
	js := f.do("GET", "/console/static/console.js", "").Body.String()
	if !strings.Contains(js, "time[datetime]") || !strings.Contains(js, "getTimezoneOffset") {
		t.Error("the script does not localize times")
	}
}

// A log longer than its event carries is read whole from the results
// tier (Backend.Result: the execution's own results, redacted); a
// reference the execution may not read leaves the tail, with a note.
func TestInspectorReadsTheWholeLog(t *testing.T) {
	f := newFixture(t)
	f.sampleExecution("x1", types.StatusOK)
	f.api.stored = map[string]any{"x1/start.logs": "first line of the whole log\n...\nlast line\n", "x9/start.logs": "another execution's log"}
	evs := f.api.events["x1"]
	for i, e := range evs {
		if e.EventType == types.EvTaskAttemptDone && e.Step == "start" {
			evs[i].Payload = map[string]any{"kind": "python", "logs": "...\nlast line\n", "logs_ref": map[string]any{"$ref": map[string]any{"key": "x1/start.logs"}}}
		}
	}
	hdr := "Authorization: Bearer " + adminTok
	body := f.do("GET", "/console/executions/x1/steps/start", "", hdr).Body.String()
	if !strings.Contains(body, "first line of the whole log") {
		t.Errorf("the whole log is not read:\n%s", body)
	}
	for i, e := range evs {
		if e.EventType == types.EvTaskAttemptDone && e.Step == "start" {
			evs[i].Payload["logs_ref"] = map[string]any{"$ref": map[string]any{"key": "x9/start.logs"}}
		}
	}
	body = f.do("GET", "/console/executions/x1/steps/start", "", hdr).Body.String()
	if strings.Contains(body, "another execution") || !strings.Contains(body, "the whole log could not be read") || !strings.Contains(body, "last line") {
		t.Errorf("a foreign reference: %s", body)
	}
}
