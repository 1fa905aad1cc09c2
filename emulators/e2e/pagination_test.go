package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// Helpers shared by pagination_test.go, pipeline_test.go and
// routing_test.go (the examples/ playbooks end to end).

// exPath returns the path of examples/<name>.
func exPath(name string) string { return filepath.Join(RepoRoot(), "examples", name) }

// exFixtures returns the stack's fixtures URL, failing the test when the
// running fixtures server predates the items endpoints (the fixtures are
// compiled into the stack supervisor: restart the stack after updating).
func exFixtures(t *testing.T) string {
	t.Helper()
	u := os.Getenv("NOETL_FIXTURES_URL")
	if u == "" {
		t.Fatal("NOETL_FIXTURES_URL is unset: source .stack/env")
	}
	resp, err := http.Get(u + "/api/v1/items/offset?limit=1")
	if err != nil {
		t.Fatalf("fixtures at %s: %v", u, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("fixtures at %s answer %d for /api/v1/items/offset: the stack runs an older fixtures build, restart it", u, resp.StatusCode)
	}
	return u
}

// exGet fetches url and decodes its JSON body.
func exGet(t *testing.T, url string) any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	var v any
	if err := jsonx.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
	return v
}

// exExecution returns GET /api/executions/{id}.
func exExecution(t *testing.T, id string) map[string]any {
	t.Helper()
	m, _ := exGet(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/api/executions/"+id).(map[string]any)
	if m == nil {
		t.Fatalf("execution %s: not an object", id)
	}
	return m
}

// exEvents returns the events of type typ of step ("" = any) and task ("" =
// any), in log order.
func exEvents(evs []map[string]any, typ, step, task string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["event_type"] != typ || (step != "" && e["step"] != step) || (task != "" && e["task"] != task) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// exPayload returns an event's payload.
func exPayload(e map[string]any) map[string]any {
	p, _ := e["payload"].(map[string]any)
	return p
}

// exDos counts policy.task.evaluated decisions of step/task by `do`.
func exDos(evs []map[string]any, step, task string) map[string]int {
	n := map[string]int{}
	for _, e := range exEvents(evs, "policy.task.evaluated", step, task) {
		n[fmt.Sprint(exPayload(e)["do"])]++
	}
	return n
}

// exIDs asserts v is the list 1..n of native ints.
func exIDs(t *testing.T, what string, v any, n int) {
	t.Helper()
	ids, ok := v.([]any)
	if !ok || len(ids) != n {
		t.Fatalf("%s: want ids 1..%d, got %s", what, n, MustJSON(v))
	}
	for i, x := range ids {
		if _, native := x.(int64); !native || x.(int64) != int64(i+1) {
			t.Fatalf("%s: ids[%d] = %#v, want %d (ids %s)", what, i, x, i+1, MustJSON(v))
		}
	}
}

// exStrings converts a JSON list to strings.
func exStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// Page numbers, by arcs: fetch_page loops back to itself while hasMore,
// the state in ctx (set_ctx from the task policy).
func TestPaginationPageArcs(t *testing.T) {
	RequireStack(t)
	api := exFixtures(t)
	r := Run(t, exPath("pagination_page_arcs.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	s := step(t, r, "summary")
	if asInt(s["count"]) != 35 || asInt(s["pages"]) != 4 {
		t.Fatalf("summary = %s", MustJSON(s))
	}
	exIDs(t, "summary.ids", s["ids"], 35)
	evs := Events(t, r.ExecutionID)
	// One step run per page, each routed back by the first (exclusive) arc
	// until hasMore is false.
	if n := Count(evs, "step.started", "fetch_page"); n != 4 {
		t.Fatalf("fetch_page ran %d times, want 4", n)
	}
	var fired []string
	for _, e := range exEvents(evs, "next.evaluated", "fetch_page", "") {
		fired = append(fired, exStrings(exPayload(e)["fired"])...)
	}
	if MustJSON(fired) != `["fetch_page","fetch_page","fetch_page","summary"]` {
		t.Fatalf("fetch_page arcs fired %v", fired)
	}
	ctx, _ := exExecution(t, r.ExecutionID)["ctx"].(map[string]any)
	if asInt(ctx["page"]) != 5 || ctx["has_more"] != false {
		t.Fatalf("execution ctx page=%v has_more=%v", ctx["page"], ctx["has_more"])
	}
	exIDs(t, "ctx.items ids", exPluck(ctx["items"], "id"), 35)
}

func exPluck(v any, key string) any {
	l, _ := v.([]any)
	out := make([]any, 0, len(l))
	for _, x := range l {
		m, _ := x.(map[string]any)
		out = append(out, m[key])
	}
	return out
}

// exCheckJump asserts a jump-pipeline pagination step: its result
// (the breaking task's), one fetch per page, jumps = pages-1, one break.
func exCheckJump(t *testing.T, r RunResult, pages, items int) {
	t.Helper()
	ok(t, r)
	s := step(t, r, "start")
	if asInt(s["count"]) != int64(items) || asInt(s["pages"]) != int64(pages) {
		t.Fatalf("start = %s, want %d items in %d pages", MustJSON(s), items, pages)
	}
	exIDs(t, "start.ids", s["ids"], items)
	evs := Events(t, r.ExecutionID)
	if n := len(exEvents(evs, "task.attempt.started", "start", "fetch")); n != pages {
		t.Fatalf("%d fetch attempts, want %d", n, pages)
	}
	dos := exDos(evs, "start", "paginate")
	want := map[string]int{"break": 1}
	if pages > 1 {
		want["jump"] = pages - 1
	}
	if MustJSON(dos) != MustJSON(want) {
		t.Fatalf("paginate decisions %v, want %d jumps and 1 break", dos, pages-1)
	}
	if n := Count(evs, "step.started", "start"); n != 1 {
		t.Fatalf("step start started %d times, want 1 (jumps stay inside the unit)", n)
	}
}

func TestPaginationOffsetJump(t *testing.T) {
	RequireStack(t)
	api := exFixtures(t)
	// limit 8 (the default): 8+8+8+8+3.
	exCheckJump(t, Run(t, exPath("pagination_offset_jump.yaml"), MustJSON(map[string]any{"api_url": api})), 5, 35)
	// One page holds everything.
	exCheckJump(t, Run(t, exPath("pagination_offset_jump.yaml"), MustJSON(map[string]any{"api_url": api, "limit": 50})), 1, 35)
}

func TestPaginationCursorJump(t *testing.T) {
	RequireStack(t)
	api := exFixtures(t)
	r := Run(t, exPath("pagination_cursor_jump.yaml"), MustJSON(map[string]any{"api_url": api}))
	exCheckJump(t, r, 4, 35)
	r = Run(t, exPath("pagination_cursor_jump.yaml"), MustJSON(map[string]any{"api_url": api, "limit": 7}))
	exCheckJump(t, r, 5, 35)
}

func TestPaginationMaxIterations(t *testing.T) {
	RequireStack(t)
	api := exFixtures(t)
	for _, tc := range []struct {
		max, pages, items int
		truncated         bool
	}{
		{max: 2, pages: 2, items: 20, truncated: true},
		{max: 3, pages: 3, items: 30, truncated: true},
		{max: 10, pages: 4, items: 35, truncated: false}, // the feed ends first
	} {
		t.Run(fmt.Sprintf("max_pages=%d", tc.max), func(t *testing.T) {
			r := Run(t, exPath("pagination_max_iterations.yaml"), MustJSON(map[string]any{"api_url": api, "max_pages": tc.max}))
			exCheckJump(t, r, tc.pages, tc.items)
			if got := step(t, r, "start")["truncated"]; got != tc.truncated {
				t.Fatalf("truncated = %v, want %v", got, tc.truncated)
			}
		})
	}
}

// A parallel loop with a pagination pipeline in every iteration: each
// iteration pages through all 35 items with its own page size.
func TestLoopWithPagination(t *testing.T) {
	RequireStack(t)
	api := exFixtures(t)
	r := Run(t, exPath("loop_with_pagination.yaml"), MustJSON(map[string]any{"api_url": api}))
	ok(t, r)
	sizes := []int64{5, 10, 12, 35}
	pages := []int64{7, 4, 3, 1}
	res, _ := step(t, r, "start")["results"].([]any)
	if len(res) != len(sizes) {
		t.Fatalf("start.results = %s", MustJSON(step(t, r, "start")))
	}
	for i, x := range res {
		m, _ := x.(map[string]any)
		if asInt(m["limit"]) != sizes[i] || asInt(m["pages"]) != pages[i] || asInt(m["count"]) != 35 ||
			asInt(m["first_id"]) != 1 || asInt(m["last_id"]) != 35 {
			t.Fatalf("iteration %d (limit %d) = %s, want %d pages of 35 items", i, sizes[i], MustJSON(m), pages[i])
		}
		exIDs(t, fmt.Sprintf("iteration %d ids", i), m["ids"], 35)
	}
	s := step(t, r, "summary")
	if asInt(s["iterations"]) != 4 || asInt(s["total_items"]) != 140 ||
		MustJSON(s["pages_per_iteration"]) != "[7,4,3,1]" || MustJSON(s["items_per_iteration"]) != "[35,35,35,35]" {
		t.Fatalf("summary = %s", MustJSON(s))
	}
	evs := Events(t, r.ExecutionID)
	if n := Count(evs, "loop.iteration.done", "start"); n != 4 {
		t.Fatalf("%d iterations done, want 4", n)
	}
	if n := len(exEvents(evs, "task.attempt.started", "start", "fetch")); n != 15 {
		t.Fatalf("%d fetches, want 15 (7+4+3+1)", n)
	}
	// Per iteration: pages-1 jumps and one break.
	perIter := map[int64]map[string]int{}
	for _, e := range exEvents(evs, "policy.task.evaluated", "start", "paginate") {
		i := asInt(e["iteration"])
		if perIter[i] == nil {
			perIter[i] = map[string]int{}
		}
		perIter[i][fmt.Sprint(exPayload(e)["do"])]++
	}
	for i, p := range pages {
		if d := perIter[int64(i)]; d["jump"] != int(p-1) || d["break"] != 1 {
			t.Fatalf("iteration %d decisions %v, want %d jumps and 1 break", i, d, p-1)
		}
	}
}
