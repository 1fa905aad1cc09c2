package template

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The templates below are copied from the NoETL conformance playbooks
// (emulators/e2e/testdata/conformance/noetl/*.yaml); each test feeds them the scope the engine would build
// at that point of the run.

// jsonResult decodes a step result the way it comes back from a Python task
// (JSON, numbers as float64).
func jsonResult(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func expect(t *testing.T, tmpl string, s Scope, want any) {
	t.Helper()
	got, err := Render(tmpl, s)
	if err != nil {
		t.Errorf("Render(%q): %v", tmpl, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Render(%q) = %#v (%T), want %#v (%T)", tmpl, got, got, want, want)
	}
}

func expectTruthy(t *testing.T, tmpl string, s Scope, want bool) {
	t.Helper()
	got, err := Truthy(tmpl, s)
	if err != nil {
		t.Errorf("Truthy(%q): %v", tmpl, err)
		return
	}
	if got != want {
		t.Errorf("Truthy(%q) = %v, want %v", tmpl, got, want)
	}
}

func TestConformanceHelloWorldAndSimplePython(t *testing.T) {
	s := NewScope(ScopeParams{Workload: map[string]any{"message": "Hello World"}})
	expect(t, "{{ message }}", s, "Hello World")
	args, err := RenderValue(map[string]any{"message": "{{ message }}"}, s)
	if err != nil || !reflect.DeepEqual(args, map[string]any{"message": "Hello World"}) {
		t.Errorf("args = %#v, %v", args, err)
	}
}

func TestConformanceHTTPRetryStatusCode(t *testing.T) {
	workload := map[string]any{"test_url": "https://httpbin.org/get"}
	expect(t, "{{ test_url }}", NewScope(ScopeParams{Workload: workload}), "https://httpbin.org/get")
	rules := []string{"{{ outcome.http.status in [500, 502, 503] }}", "{{ outcome.status == 'error' }}"}
	outcomes := []struct {
		outcome map[string]any
		want    []bool
	}{
		{map[string]any{"status": "error", "http": map[string]any{"status": 503}}, []bool{true, true}},
		{map[string]any{"status": "error", "http": map[string]any{"status": json.Number("502")}}, []bool{true, true}},
		{map[string]any{"status": "error", "http": map[string]any{"status": 404.0}}, []bool{false, true}},
		{map[string]any{"status": "ok", "http": map[string]any{"status": int64(200)}}, []bool{false, false}},
		{map[string]any{"status": "error", "error": map[string]any{"kind": "network"}}, []bool{false, true}},
	}
	for _, o := range outcomes {
		s := NewScope(ScopeParams{Workload: workload, Extra: map[string]any{"outcome": o.outcome, "_attempt": 1}})
		for i, r := range rules {
			expectTruthy(t, r, s, o.want[i])
		}
	}
}

func TestConformancePythonRetryException(t *testing.T) {
	err := NewScope(ScopeParams{Extra: map[string]any{"outcome": map[string]any{"status": "error", "py": map[string]any{"exception_type": "Exception"}}}})
	ok := NewScope(ScopeParams{Extra: map[string]any{"outcome": map[string]any{"status": "ok", "result": map[string]any{"success": true}}}})
	expectTruthy(t, "{{ outcome.status == 'error' }}", err, true)
	expectTruthy(t, "{{ outcome.status == 'error' }}", ok, false)
}

func TestConformanceArgsPassing(t *testing.T) {
	// start's arc to use_vars renders its args with the workload in scope.
	start := NewScope(ScopeParams{
		Workload: map[string]any{"initial_value": 100},
		Results:  map[string]any{"start": jsonResult(t, `{"status": "initialized"}`)},
	})
	arcArgs, err := RenderValue(map[string]any{"test_var": "{{ initial_value }}", "computed": 200}, start)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(arcArgs, map[string]any{"test_var": 100, "computed": 200}) {
		t.Fatalf("arc args = %#v", arcArgs)
	}
	// use_vars' task args see the token as args.
	useVars := NewScope(ScopeParams{Workload: map[string]any{"initial_value": 100}, Args: arcArgs.(map[string]any)})
	taskArgs, err := RenderValue(map[string]any{"test_var": "{{ args.test_var }}", "computed": "{{ args.computed }}"}, useVars)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(taskArgs, map[string]any{"test_var": 100, "computed": 200}) {
		t.Errorf("task args = %#v (Python asserts test_var == 100 and computed == 200)", taskArgs)
	}
}

func TestConformanceEndWithAction(t *testing.T) {
	workload := map[string]any{"cleanup_required": true}
	results := map[string]any{
		"start":        jsonResult(t, `{"status": "initialized"}`),
		"process_data": jsonResult(t, `{"status": "success", "data": {"records_processed": 100, "temp_table": "temp_session_12345"}}`),
	}
	arc := map[string]any{"input_data": map[string]any{
		"temp_table":       "{{ process_data.data.temp_table }}",
		"cleanup_required": "{{ cleanup_required }}",
	}}
	endArgs := map[string]any{"input_data": map[string]any{
		"temp_table":       "{{ args.input_data.temp_table | default(process_data.data.temp_table)\n}}",
		"cleanup_required": "{{ args.input_data.cleanup_required | default(cleanup_required)\n}}",
	}}
	want := map[string]any{"input_data": map[string]any{"temp_table": "temp_session_12345", "cleanup_required": true}}

	token, err := RenderValue(arc, NewScope(ScopeParams{Workload: workload, Results: results}))
	if err != nil || !reflect.DeepEqual(token, want) {
		t.Fatalf("arc args = %#v, %v", token, err)
	}
	// With the arc's token as args.
	got, err := RenderValue(endArgs, NewScope(ScopeParams{Workload: workload, Results: results, Args: token.(map[string]any)}))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("end args with token = %#v, %v", got, err)
	}
	// Without a token: the defaults fall back to the step result and workload.
	got, err = RenderValue(endArgs, NewScope(ScopeParams{Workload: workload, Results: results}))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("end args without token = %#v, %v", got, err)
	}
	// Nothing at all: undefined, not an error.
	got, err = RenderValue(endArgs, NewScope(ScopeParams{}))
	if err != nil || !reflect.DeepEqual(got, map[string]any{"input_data": map[string]any{"temp_table": nil, "cleanup_required": nil}}) {
		t.Errorf("end args with nothing in scope = %#v, %v", got, err)
	}
}

func TestConformanceLoopInstanceIsolation(t *testing.T) {
	workload := map[string]any{
		"users":    []any{map[string]any{"id": 1, "name": "Alice"}, map[string]any{"id": 2, "name": "Bob"}},
		"products": []any{map[string]any{"id": 101, "name": "Laptop"}, map[string]any{"id": 102, "name": "Mouse"}},
	}
	s := NewScope(ScopeParams{Workload: workload})
	users := mustRender(t, "{{ users }}", s).([]any)
	products := mustRender(t, "{{ products }}", s).([]any)
	if len(users) != 2 || len(products) != 2 {
		t.Fatalf("loop.in: %v %v", users, products)
	}
	var userResults []any
	for i, u := range users {
		it := NewScope(ScopeParams{Workload: workload, Iterator: "user", Item: u, LoopIndex: intp(i)})
		args, err := RenderValue(map[string]any{"user": "{{ user }}"}, it)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(args.(map[string]any)["user"], u) {
			t.Errorf("iteration %d: user = %#v", i, args)
		}
		expect(t, "{{ iter.user.name }}", it, u.(map[string]any)["name"])
		userResults = append(userResults, map[string]any{"type": "user", "id": u.(map[string]any)["id"]})
	}
	it := NewScope(ScopeParams{Workload: workload, Iterator: "product", Item: products[1], LoopIndex: intp(1)})
	expect(t, "{{ product.name }}", it, "Mouse")
	expect(t, "{{ user }}", it, nil)

	verify := NewScope(ScopeParams{Workload: workload, Results: map[string]any{
		"process_items_users":    map[string]any{"results": userResults},
		"process_items_products": map[string]any{"results": []any{map[string]any{"id": 101}, map[string]any{"id": 102}}},
	}})
	args, err := RenderValue(map[string]any{"users_result": "{{ process_items_users }}", "products_result": "{{ process_items_products }}"}, verify)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(args.(map[string]any)["users_result"].(map[string]any)["results"].([]any)); n != 2 {
		t.Errorf("users_result has %d results", n)
	}
}

func TestConformancePaginationBasic(t *testing.T) {
	workload := map[string]any{
		"api_url": "http://paginated-api.test-server.svc.cluster.local:5555", "current_page": 1,
		"page_size": 10, "collected_items": []any{}, "has_more": true,
	}
	setCtx := map[string]any{
		"current_page": "{{ workload.current_page }}", "page_size": "{{ workload.page_size }}",
		"collected_items": "{{ workload.collected_items }}", "has_more": "{{ workload.has_more }}",
	}
	ctxV, err := RenderValue(setCtx, NewScope(ScopeParams{Workload: workload}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxV.(map[string]any)
	if !reflect.DeepEqual(ctx, map[string]any{"current_page": 1, "page_size": 10, "collected_items": []any{}, "has_more": true}) {
		t.Fatalf("ctx after start = %#v", ctx)
	}
	for page := 1; ; page++ {
		s := NewScope(ScopeParams{Workload: workload, Ctx: ctx})
		expect(t, "{{ api_url }}/api/v1/assessments", s, "http://paginated-api.test-server.svc.cluster.local:5555/api/v1/assessments")
		params, err := RenderValue(map[string]any{"page": "{{ ctx.current_page }}", "pageSize": "{{ ctx.page_size }}"}, s)
		if err != nil || !reflect.DeepEqual(params, map[string]any{"page": page, "pageSize": 10}) {
			t.Fatalf("page %d params = %#v, %v", page, params, err)
		}
		// HTTP outcome and policy.
		hasMore := page < 4
		fetch := jsonResult(t, `{"status_code": 200, "data": {"data": [{"id": 1}], "paging": {"hasMore": `+map[bool]string{true: "true", false: "false"}[hasMore]+`}}}`)
		okOutcome := NewScope(ScopeParams{Workload: workload, Ctx: ctx, Extra: map[string]any{"outcome": map[string]any{"status": "ok", "result": fetch, "error": nil}}})
		expectTruthy(t, "{{ outcome.status == 'error' and outcome.error.retryable }}", okOutcome, false)
		expectTruthy(t, "{{ outcome.status == 'error' }}", okOutcome, false)
		errOutcome := NewScope(ScopeParams{Extra: map[string]any{"outcome": map[string]any{"status": "error", "error": map[string]any{"retryable": true, "status": 503}}}})
		expectTruthy(t, "{{ outcome.status == 'error' and outcome.error.retryable }}", errOutcome, true)

		// check_pagination's args and its result (JSON from Python).
		s = NewScope(ScopeParams{Workload: workload, Ctx: ctx, Results: map[string]any{"fetch_page": fetch}})
		args, err := RenderValue(map[string]any{"response": "{{ fetch_page }}", "collected": "{{ ctx.collected_items }}", "current_page": "{{ ctx.current_page }}"}, s)
		if err != nil {
			t.Fatal(err)
		}
		if args.(map[string]any)["current_page"] != page {
			t.Fatalf("current_page arg = %#v", args)
		}
		collected := append(args.(map[string]any)["collected"].([]any), map[string]any{"id": page})
		b, _ := json.Marshal(map[string]any{"collected_items": collected, "has_more": hasMore, "next_page": page + 1, "total_collected": len(collected)})
		check := jsonResult(t, string(b))
		s = NewScope(ScopeParams{Workload: workload, Ctx: ctx, Results: map[string]any{"fetch_page": fetch, "check_pagination": check}})
		patch, err := RenderValue(map[string]any{
			"collected_items": "{{ check_pagination.collected_items }}",
			"current_page":    "{{ check_pagination.next_page }}",
			"has_more":        "{{ check_pagination.has_more }}",
		}, s)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range patch.(map[string]any) {
			ctx[k] = v
		}
		if ctx["current_page"] != page+1 {
			t.Fatalf("next_page from JSON should be int %d, got %#v", page+1, ctx["current_page"])
		}
		s = NewScope(ScopeParams{Workload: workload, Ctx: ctx})
		more, err1 := Truthy("{{ ctx.has_more == true }}", s)
		done, err2 := Truthy("{{ ctx.has_more != true }}", s)
		if err1 != nil || err2 != nil || more == done || more != hasMore {
			t.Fatalf("page %d arcs: more=%v done=%v (%v %v)", page, more, done, err1, err2)
		}
		if done {
			break
		}
	}
	items := mustRender(t, "{{ ctx.collected_items }}", NewScope(ScopeParams{Ctx: ctx})).([]any)
	if len(items) != 4 {
		t.Errorf("collected %d items", len(items))
	}
}

func TestConformanceStartWithAction(t *testing.T) {
	workload := map[string]any{"test_value": "hello"}
	s := NewScope(ScopeParams{Workload: workload})
	expect(t, "{{ workload }}", s, map[string]any{"test_value": "hello"})
	results := map[string]any{"start": jsonResult(t, `{"status": "success", "data": {"executed": true, "input": {"test_value": "hello"}}}`)}
	s = NewScope(ScopeParams{Workload: workload, Results: results})
	expect(t, "{{ start.data.executed }}", s, true)
	withToken := NewScope(ScopeParams{Workload: workload, Results: results, Args: map[string]any{"from_start": true}})
	expect(t, "{{ args.from_start | default(start.data.executed) }}", withToken, true)
	expect(t, "{{ args.from_start | default(start.data.executed) }}", s, true)
}

func TestConformanceV2LoopTest(t *testing.T) {
	workload := map[string]any{
		"test_message": "Testing V2 loop/iterator support",
		"numbers":      []any{1, 2, 3, 4, 5},
		"users":        []any{map[string]any{"name": "Alice", "age": 30}, map[string]any{"name": "Bob", "age": 25}},
	}
	s := NewScope(ScopeParams{Workload: workload})
	numbers := mustRender(t, "{{ numbers }}", s).([]any)
	for i, n := range numbers {
		it := NewScope(ScopeParams{Workload: workload, Iterator: "num", Item: n, LoopIndex: intp(i)})
		args, err := RenderValue(map[string]any{"num": "{{ num }}", "loop_index": "{{ loop_index }}"}, it)
		if err != nil || !reflect.DeepEqual(args, map[string]any{"num": i + 1, "loop_index": i}) {
			t.Errorf("iteration %d args = %#v, %v", i, args, err)
		}
	}
	users := mustRender(t, "{{ users }}", s).([]any)
	it := NewScope(ScopeParams{Workload: workload, Iterator: "user", Item: users[1], LoopIndex: intp(1)})
	args, err := RenderValue(map[string]any{"user": "{{ user }}", "loop_index": "{{ loop_index }}"}, it)
	if err != nil || !reflect.DeepEqual(args, map[string]any{"user": map[string]any{"name": "Bob", "age": 25}, "loop_index": 1}) {
		t.Errorf("user loop args = %#v, %v", args, err)
	}
	results := map[string]any{
		"process": jsonResult(t, `{"original_sum": 15, "doubled_sum": 30, "count": 5}`),
		"verify":  jsonResult(t, `{"status": "passed", "original_sum": 15, "doubled_sum": 30, "count": 5}`),
	}
	s = NewScope(ScopeParams{Workload: workload, Results: results})
	expect(t, "{{ process }}", s, map[string]any{"original_sum": 15, "doubled_sum": 30, "count": 5})
	expect(t, "{{ verify }}", s, map[string]any{"status": "passed", "original_sum": 15, "doubled_sum": 30, "count": 5})
	// What a Python task receives after JSON encoding.
	b, _ := json.Marshal(mustRender(t, "{{ verify }}", s))
	if !strings.Contains(string(b), `"original_sum":15`) {
		t.Errorf("verify_result JSON = %s", b)
	}
}
