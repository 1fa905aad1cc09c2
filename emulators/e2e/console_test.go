package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/noetl/gcpengine/emulators/browser"
)

var (
	demoOnce   sync.Once
	demoResult RunResult
)

// demo runs the main job (examples/countries_etl.yaml, what scripts/demo
// runs) once per test binary: TestMainJobCountriesETL and the console's
// browser tests share the execution. The fixture service's failure
// injection is reset first, so the run meets its injected 503s (and
// retries them) whatever ran on the stack before.
func demo(t *testing.T) RunResult {
	t.Helper()
	demoOnce.Do(func() {
		resp, err := http.Post(os.Getenv("NOETL_FIXTURES_URL")+"/inject/reset", "application/json", nil)
		if err != nil {
			t.Fatalf("reset the fixtures' failure injection: %v", err)
		}
		resp.Body.Close()
		wl := MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "pg_dsn": os.Getenv("NOETL_PG_DSN")})
		demoResult = Run(t, filepath.Join(RepoRoot(), "examples", "countries_etl.yaml"), wl)
	})
	if demoResult.ExecutionID == "" {
		t.Fatalf("the demo did not run (see the first test that ran it)")
	}
	return demoResult
}

// consoleURL is the console on the stack.
func consoleURL() string { return os.Getenv("NOETL_FUNCTIONS_URL") + "/api/console" }

// openConsole starts Chromium (scripts/up installs Debian's chromium)
// and logs in to the console with the stack's token through its form.
func openConsole(t *testing.T) *browser.Browser {
	t.Helper()
	b, err := browser.Start(1400, 1000)
	if errors.Is(err, browser.ErrNoChromium) && os.Getenv("NOETL_STACK") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Do(time.Minute, browser.Login(consoleURL(), os.Getenv("NOETL_API_TOKEN"))); err != nil {
		t.Fatalf("log in to the console: %v", err)
	}
	return b
}

// js evaluates expr in the page.
func js[T any](t *testing.T, b *browser.Browser, expr string) T {
	t.Helper()
	v, err := browser.Run(b, 30*time.Second, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until expr is true in the page.
func waitJS(t *testing.T, b *browser.Browser, expr string, timeout time.Duration) {
	t.Helper()
	if _, err := browser.Run(b, timeout+5*time.Second, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// TestConsoleDemo: the demo's execution page, in Chromium: the graph
// with every step ok, the timeline with the loop's 249 iterations and
// the attempts the policy retried (64 with the fixtures' default
// injection), their backoffs; the page's landmarks, labels and keyboard
// entry.
func TestConsoleDemo(t *testing.T) {
	RequireStack(t)
	r := demo(t)
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	retried := 0
	for _, e := range evs {
		if p, _ := e["payload"].(map[string]any); e["event_type"] == "policy.task.evaluated" && p["do"] == "retry" {
			retried++
		}
	}
	// (Under delivery chaos a duplicated unit may run an attempt twice.)
	if os.Getenv("NOETL_FIXTURE_FAIL_RATE") == "" && os.Getenv("NOETL_FIXTURE_SEED") == "" && os.Getenv("NOETL_DELIVERY_CHAOS") == "" && retried != 64 {
		t.Fatalf("the demo retried %d attempts, want the 64 the fixtures inject by default", retried)
	}
	b := openConsole(t)
	if err := b.Do(time.Minute,
		chromedp.Navigate(consoleURL()+"/executions/"+r.ExecutionID),
		chromedp.WaitVisible(chromedp.CSS("#timeline svg")),
	); err != nil {
		t.Fatal(err)
	}
	nodes := js[[]string](t, b, `Array.from(document.querySelectorAll('#graph g.node')).map(n => n.dataset.step + '=' + n.dataset.status)`)
	if strings.Join(nodes, ",") != "start=ok,load_subdivisions=ok,summary=ok" {
		t.Errorf("graph nodes %v, want the three steps ok", nodes)
	}
	if w := js[float64](t, b, `document.querySelector('#graph svg').getBoundingClientRect().width`); w < 100 {
		t.Errorf("the graph is %v px wide", w)
	}
	if n := js[int](t, b, `document.querySelectorAll('#graph g.edge.taken').length`); n != 2 {
		t.Errorf("%d arcs drawn as taken, want 2", n)
	}
	its := js[int](t, b, `document.querySelectorAll('#timeline [data-index]').length`)
	distinct := js[int](t, b, `new Set(Array.from(document.querySelectorAll('#timeline [data-index]')).map(e => e.dataset.index)).size`)
	if its != 249 || distinct != 249 {
		t.Errorf("the timeline shows %d iteration bars (%d distinct), want 249", its, distinct)
	}
	got := js[int](t, b, `document.querySelectorAll('#timeline [data-kind=attempt][data-retried]').length`)
	gaps := js[int](t, b, `document.querySelectorAll('#timeline [data-kind=backoff]').length`)
	if got != retried || gaps != retried {
		t.Errorf("the timeline shows %d retried attempts and %d backoffs, want %d", got, gaps, retried)
	}
	summary := js[string](t, b, `document.getElementById('timeline-summary').textContent`)
	if !strings.Contains(summary, "249 iterations") || !strings.Contains(summary, fmt.Sprintf("%d retried", retried)) {
		t.Errorf("timeline summary %q", summary)
	}
	if w := js[float64](t, b, `document.querySelector('#timeline svg').getBoundingClientRect().width`); w < 800 {
		t.Errorf("the timeline is %v px wide", w)
	}
	// No live updates for an ended execution.
	if n := js[int](t, b, `document.querySelectorAll('[data-follow]').length`); n != 0 {
		t.Errorf("%d regions still followed on an ended execution", n)
	}
	// Accessibility basics: landmarks, a label for every field, the
	// skip link first in the keyboard order.
	for _, sel := range []string{"header", "nav[aria-label]", "main", "footer", "html[lang]"} {
		if n := js[int](t, b, `document.querySelectorAll('`+sel+`').length`); n < 1 {
			t.Errorf("no %s", sel)
		}
	}
	unlabelled := js[[]string](t, b, `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea')).filter(e => e.labels.length === 0 && !e.getAttribute('aria-label')).map(e => e.outerHTML)`)
	if len(unlabelled) > 0 {
		t.Errorf("fields without a label: %v", unlabelled)
	}
	if err := b.Do(10*time.Second, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	if first := js[string](t, b, `document.activeElement.textContent`); first != "Skip to content" {
		t.Errorf("the first Tab stop is %q, want the skip link", first)
	}
	// Every step box is a link (keyboard reachable) to its row.
	if n := js[int](t, b, `document.querySelectorAll('#graph a.nodelink[href^="#step-"]').length`); n != 3 {
		t.Errorf("%d step links in the graph", n)
	}
}

// TestConsoleFollowsAndCancels: an execution's page follows it while it
// runs (the page updates in place to its end), and the cancel button of
// a running one cancels it.
func TestConsoleFollowsAndCancels(t *testing.T) {
	RequireStack(t)
	b := openConsole(t)
	const slow = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: console_follow, path: tests/console_follow}
workflow:
  - step: start
    loop:
      in: [1, 2, 3, 4, 5, 6]
      iterator: n
      spec: {mode: sequential}
    tool:
      kind: python
      args: {n: "{{ n }}"}
      code: |
        import time
        time.sleep(1)
        result = {"n": n}
    next:
      arcs: [{step: end}]
  - step: end
    tool: {kind: noop}
`
	id := startInline(t, slow, nil)
	if err := b.Do(time.Minute,
		chromedp.Navigate(consoleURL()+"/executions/"+id),
		chromedp.WaitVisible(chromedp.CSS("#live h1")),
	); err != nil {
		t.Fatal(err)
	}
	// A mark that a reload would erase.
	js[bool](t, b, `(window.__console_loaded = performance.timeOrigin, true)`)
	first := js[string](t, b, `document.querySelector('#live h1 .badge').textContent`)
	if first != "requested" && first != "running" {
		t.Fatalf("the page opened on a %q execution; the playbook should still be running", first)
	}
	// The page follows until the log is complete: its batches land in
	// any order (under delivery chaos an iteration's batch can land after
	// playbook.finished's), so the end is when it stops following.
	waitJS(t, b, `document.querySelector('#live h1 .badge').textContent === 'ok' && !!document.querySelector('#events tr[data-type="playbook.finished"]') && !document.querySelector('[data-follow]')`, 3*time.Minute)
	if js[float64](t, b, `window.__console_loaded || 0`) == 0 || js[string](t, b, `document.documentElement.dataset.refreshed || ''`) == "" {
		t.Error("the page was reloaded instead of updated in place")
	}
	if n := js[int](t, b, `document.querySelectorAll('[data-follow]').length`); n != 0 {
		t.Errorf("%d regions still followed after the end", n)
	}
	if n := js[int](t, b, `document.querySelectorAll('#timeline [data-index]').length`); n != 6 {
		t.Errorf("%d iterations on the followed page, want 6", n)
	}

	// Cancel: a long sleep, canceled from its page.
	const long = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: console_cancel, path: tests/console_cancel}
workflow:
  - step: start
    tool:
      kind: python
      code: |
        import time
        time.sleep(120)
        result = {}
`
	id = startInline(t, long, nil)
	// The cancel button asks for a confirmation on its own page; nothing
	// is canceled until it is confirmed.
	if err := b.Do(time.Minute,
		chromedp.Navigate(consoleURL()+"/executions/"+id),
		chromedp.WaitVisible(chromedp.ID("cancel")),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.Run(b, time.Minute, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("cancel")))); err != nil {
		t.Fatal(err)
	}
	if err := b.Do(time.Minute, chromedp.WaitVisible(chromedp.ID("cancel-confirm")), chromedp.SendKeys(chromedp.ID("cancel-reason"), "stopped by the browser test")); err != nil {
		t.Fatal(err)
	}
	if st := waitStatusNow(t, id); st == "canceled" {
		t.Fatal("the execution was canceled before the confirmation")
	}
	// The form posts, and the console redirects back to the page.
	if _, err := browser.Run(b, time.Minute, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("cancel-confirm")))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, `!!document.querySelector('#live h1 .badge') && document.querySelector('#live h1 .badge').textContent === 'canceled'`, time.Minute)
	st := waitStatus(t, id, 30*time.Second)
	if st["status"] != "canceled" {
		t.Fatalf("status %v after the console's cancel", st["status"])
	}
	evs := Events(t, id)
	found := false
	for _, e := range evs {
		if p, _ := e["payload"].(map[string]any); e["event_type"] == "playbook.cancel.requested" && strings.Contains(fmt.Sprint(p), "stopped by the browser test") {
			found = true
		}
	}
	if !found {
		t.Error("no cancellation event with the reason typed in the console")
	}
	if n := js[int](t, b, `document.querySelectorAll('#cancel').length`); n != 0 {
		t.Error("a canceled execution still offers cancel")
	}
}

// consolePage GETs a console page with the stack's token (as
// gcloud run services proxy sends an identity token) and returns its
// status, body and server time (the Server-Timing header, ms).
func consolePage(t testing.TB, path string) (int, []byte, float64) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, consoleURL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+os.Getenv("NOETL_API_TOKEN"))
	resp, err := Anonymous.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ms := -1.0
	if st := resp.Header.Get("Server-Timing"); strings.HasPrefix(st, "render;dur=") {
		ms, _ = strconv.ParseFloat(strings.TrimPrefix(st, "render;dur="), 64)
	}
	return resp.StatusCode, b, ms
}

// waitStatusNow is an execution's status now.
func waitStatusNow(t *testing.T, id string) string {
	t.Helper()
	_, m := apiDo(t, http.MethodGet, "/executions/"+id, nil)
	st, _ := m["status"].(string)
	return st
}
