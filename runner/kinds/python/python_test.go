package python

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/types"
)

// request mirrors the fields of tools.Request that the kind uses (the kind
// packages cannot import package tools, which imports them).
type request struct {
	Args     map[string]any
	Config   map[string]any
	TimeoutS float64
}

func (t *Tool) run(ctx context.Context, r request) types.Outcome {
	return t.Exec(ctx, r.Args, r.Config, r.TimeoutS)
}

var (
	toolOnce sync.Once
	theTool  *Tool
)

func tool(t testing.TB) *Tool {
	toolOnce.Do(func() { theTool = New(Options{}) })
	if _, err := theTool.Interpreter(); err != nil {
		t.Fatalf("python3 is required for these tests: %v", err)
	}
	return theTool
}

func run(t testing.TB, code string, args map[string]any, cfg map[string]any) types.Outcome {
	t.Helper()
	c := map[string]any{"code": code}
	for k, v := range cfg {
		c[k] = v
	}
	return tool(t).run(context.Background(), request{Args: args, Config: c})
}

func mustOK(t testing.TB, o types.Outcome) any {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %q, error %+v, logs:\n%s", o.Status, o.Error, o.Logs)
	}
	return o.Result
}

func eq(t testing.TB, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("result mismatch\n got: %#v\nwant: %#v", got, want)
	}
}

type M = map[string]any
type L = []any

// conformanceCase is one python task of a conformance playbook with the args
// the worker would pass (task args merged over step args, rendered).
type conformanceCase struct {
	args     M
	libs     any
	want     any
	wantLogs string
}

func items(n int) L {
	out := L{}
	for i := 1; i <= n; i++ {
		out = append(out, M{"id": int64(i)})
	}
	return out
}

var conformanceCases = map[string]conformanceCase{
	"hello_world.yaml/start/0":     {args: M{}, want: M{"status": "initialized"}},
	"hello_world.yaml/test_step/0": {args: M{"message": "Hello World"}, want: M{"status": "ok", "data": M{"message": "Hello World"}}, wantLogs: "HELLO_WORLD: Hello World\n"},
	"hello_world.yaml/end/0":       {args: M{}, want: M{"status": "complete"}},

	"http_retry_status_code.yaml/end/0": {args: M{}, want: M{"status": "complete"}},
	// python_retry_exception.yaml/start/0 is random: TestConformanceRetryException.
	"python_retry_exception.yaml/end/0": {args: M{}, want: M{"status": "complete"}},

	"test_args_passing.yaml/start/init": {want: M{"status": "initialized"}},
	"test_args_passing.yaml/use_vars/compute": {
		args:     M{"test_var": int64(100), "computed": int64(200)},
		want:     M{"status": "success", "result": int64(300)},
		wantLogs: "test_var=100, computed=200, result=300\n",
	},
	"test_args_passing.yaml/end/complete": {want: M{"status": "complete"}},

	"test_end_with_action.yaml/start/init": {want: M{"status": "initialized"}},
	"test_end_with_action.yaml/process_data/process": {want: M{"status": "success", "data": M{
		"records_processed": int64(100), "temp_table": "temp_session_12345"}}},
	"test_end_with_action.yaml/end/cleanup": {
		args: M{"input_data": M{"temp_table": "temp_session_12345", "cleanup_required": true}},
		want: M{"status": "completed", "message": "Cleanup performed on temp_session_12345",
			"data": M{"cleaned_up": true, "table": "temp_session_12345"}},
	},

	"test_loop_instance_isolation.yaml/start/0": {want: M{"message": "Starting workflow"}},
	"test_loop_instance_isolation.yaml/process_items_users/0": {
		args: M{"user": M{"id": int64(1), "name": "Alice"}},
		want: M{"type": "user", "id": int64(1), "name": "Alice", "message": "Processed user Alice"},
	},
	"test_loop_instance_isolation.yaml/middle/0": {want: M{"message": "Middle step executed"}},
	"test_loop_instance_isolation.yaml/process_items_products/0": {
		args: M{"product": M{"id": int64(102), "name": "Mouse"}},
		want: M{"type": "product", "id": int64(102), "name": "Mouse", "message": "Processed product Mouse"},
	},
	"test_loop_instance_isolation.yaml/verify_results/0": {
		args: M{
			"users_result":    M{"results": L{M{"id": int64(1)}, M{"id": int64(2)}}},
			"products_result": M{"results": L{M{"id": int64(101)}, M{"id": int64(102)}}},
		},
		want: M{
			"users_count": int64(2), "products_count": int64(2),
			"verification":     "Both loops completed independently",
			"users_results":    M{"results": L{M{"id": int64(1)}, M{"id": int64(2)}}},
			"products_results": M{"results": L{M{"id": int64(101)}, M{"id": int64(102)}}},
		},
	},
	"test_loop_instance_isolation.yaml/end/0": {want: M{"message": "Workflow completed"}},

	"test_pagination_basic.yaml/start/0": {args: M{}, want: M{"status": "initialized"}},
	"test_pagination_basic.yaml/check_pagination/0": {
		args: M{
			"response": M{"data": M{"data": items(2), "paging": M{"hasMore": true}}, "status_code": 200,
				"headers": M{}, "url": "http://x/api/v1/assessments?page=1&pageSize=10", "elapsed_ms": int64(3)},
			"collected":    L{},
			"current_page": int64(1),
		},
		want: M{"collected_items": items(2), "has_more": true, "next_page": int64(2), "total_collected": int64(2)},
	},
	"test_pagination_basic.yaml/validate_results/0": {
		args:     M{"items": items(35)},
		want:     M{"status": "success", "total_items": int64(35), "first_id": int64(1), "last_id": int64(35), "expected": int64(35)},
		wantLogs: "Total items fetched: 35\nFirst item: {'id': 1}\nLast item: {'id': 35}\n",
	},
	"test_pagination_basic.yaml/end/0": {args: M{}, want: M{"status": "complete"}},

	"test_start_with_action.yaml/start/init_action": {
		args: M{"input_data": M{"test_value": "hello"}},
		want: M{"status": "success", "message": "Start step executed with action type",
			"data": M{"executed": true, "input": M{"test_value": "hello"}}},
	},
	"test_start_with_action.yaml/process/process_action": {
		args: M{"from_start": true},
		want: M{"status": "success", "message": "Process step executed", "data": M{"from_start": true, "processed": true}},
	},
	"test_start_with_action.yaml/end/complete": {want: M{"status": "complete"}},

	"v2_loop_test.yaml/start/0": {
		args:     M{"num": int64(3), "loop_index": int64(2)},
		want:     M{"number": int64(3), "doubled": int64(6), "index": int64(2)},
		wantLogs: "[LOOP] Processing number 3 at index 2\n[LOOP] Result: 6\n",
	},
	"v2_loop_test.yaml/process/0": {
		args:     M{},
		want:     M{"original_sum": int64(15), "doubled_sum": int64(30), "count": int64(5)},
		wantLogs: "[PROCESS] Loop completed, analyzing results\n[PROCESS] Input data type: dict\n[PROCESS] Original sum: 15\n[PROCESS] Doubled sum: 30\n",
	},
	"v2_loop_test.yaml/user_loop/0": {
		args:     M{"user": M{"name": "Bob", "age": int64(25)}, "loop_index": int64(1)},
		want:     M{"name": "Bob", "age": int64(25), "category": "junior", "index": int64(1)},
		wantLogs: "[USER_LOOP] Processing user Bob (age 25) at index 1\n[USER_LOOP] Category: junior\n",
	},
	"v2_loop_test.yaml/verify/0": {
		args:     M{"process_result": M{"original_sum": int64(15), "doubled_sum": int64(30), "count": int64(5)}},
		want:     M{"status": "passed", "original_sum": int64(15), "doubled_sum": int64(30), "count": int64(5)},
		wantLogs: "[VERIFY] Verifying loop test results\n[VERIFY] Processed 5 numbers\n[VERIFY] Original sum: 15\n[VERIFY] Doubled sum: 30\n[VERIFY] Verification: passed\n",
	},
	"v2_loop_test.yaml/end/0": {
		args:     M{"verify_result": M{"status": "passed", "original_sum": int64(15), "doubled_sum": int64(30), "count": int64(5)}},
		want:     M{"status": "ok", "test_passed": true},
		wantLogs: "[END] Loop test completed successfully!\n[END] Verification status: passed\n[END] Processed 5 numbers\n[END] Original sum: 15, Doubled sum: 30\n",
	},

	"v2_simple_python.yaml/start/0": {
		args:     M{"message": "Hello from V2"},
		want:     M{"status": "ok", "message": "Hello from V2", "timestamp": "2025-12-11"},
		wantLogs: "Processing: Hello from V2\n",
	},
	"v2_simple_python.yaml/end/0": {args: M{}, want: M{"status": "completed"}},
}

func TestConformanceSnippets(t *testing.T) {
	keys := make([]string, 0, len(conformanceCode))
	for k := range conformanceCode {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if key == "python_retry_exception.yaml/start/0" {
			continue
		}
		c, ok := conformanceCases[key]
		if !ok {
			t.Errorf("no test case for python snippet %s", key)
			continue
		}
		t.Run(key, func(t *testing.T) {
			var cfg M
			if c.libs != nil {
				cfg = M{"libs": c.libs}
			}
			o := run(t, conformanceCode[key], c.args, cfg)
			eq(t, mustOK(t, o), c.want)
			if o.Logs != c.wantLogs {
				t.Fatalf("logs = %q, want %q", o.Logs, c.wantLogs)
			}
		})
	}
}

// The verify/end steps of v2_loop_test also accept their input as a JSON
// string (the code parses it).
func TestConformanceLoopVerifyStringInput(t *testing.T) {
	o := run(t, conformanceCode["v2_loop_test.yaml/verify/0"],
		M{"process_result": `{"original_sum": 15, "doubled_sum": 30, "count": 5}`}, nil)
	eq(t, mustOK(t, o), M{"status": "passed", "original_sum": int64(15), "doubled_sum": int64(30), "count": int64(5)})
}

func TestConformanceRetryException(t *testing.T) {
	code := conformanceCode["python_retry_exception.yaml/start/0"]
	var sawOK, sawErr bool
	for i := 0; i < 60 && !(sawOK && sawErr); i++ {
		o := run(t, code, M{}, M{"libs": M{"random": "random"}})
		switch o.Status {
		case types.StatusOK:
			sawOK = true
			r := o.Result.(M)
			v := r["data"].(M)["value"].(int64)
			if r["success"] != true || v < 70 || v > 100 || r["message"] != fmt.Sprintf("Success after retry (value: %d)", v) {
				t.Fatalf("unexpected ok result %#v", r)
			}
		case types.StatusError:
			sawErr = true
			if o.Py == nil || o.Py.ExceptionType != "Exception" || o.Error.Kind != "python" || o.Error.Retryable ||
				!strings.HasPrefix(o.Error.Message, "Exception: Random failure (value: ") {
				t.Fatalf("unexpected error outcome %+v py=%+v", o.Error, o.Py)
			}
			if !strings.Contains(o.Logs, "Traceback") || !strings.Contains(o.Logs, `File "<task>", line 5`) {
				t.Fatalf("traceback missing from logs: %q", o.Logs)
			}
		default:
			t.Fatalf("status %q", o.Status)
		}
	}
	if !sawOK || !sawErr {
		t.Fatalf("after 60 runs: sawOK=%v sawErr=%v", sawOK, sawErr)
	}
}

// TestConformanceSnippetsUpToDate checks snippets_test.go against the
// vendored conformance playbooks (emulators/e2e/testdata/conformance/noetl,
// or the directory NOETL_CONFORMANCE_DIR names).
func TestConformanceSnippetsUpToDate(t *testing.T) {
	dir := os.Getenv("NOETL_CONFORMANCE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "emulators", "e2e", "testdata", "conformance", "noetl")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Skipf("conformance playbooks not found in %s (set NOETL_CONFORMANCE_DIR)", dir)
	}
	found := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Workflow []struct {
				Step string    `yaml:"step"`
				Tool yaml.Node `yaml:"tool"`
			} `yaml:"workflow"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, st := range doc.Workflow {
			var tasks []map[string]any
			switch st.Tool.Kind {
			case yaml.MappingNode:
				var m map[string]any
				if err := st.Tool.Decode(&m); err != nil {
					t.Fatal(err)
				}
				tasks = append(tasks, m)
			case yaml.SequenceNode:
				if err := st.Tool.Decode(&tasks); err != nil {
					t.Fatal(err)
				}
			}
			for i, task := range tasks {
				if task["kind"] != "python" {
					continue
				}
				name := fmt.Sprint(i)
				if n, ok := task["name"].(string); ok {
					name = n
				}
				found[filepath.Base(f)+"/"+st.Step+"/"+name], _ = task["code"].(string)
			}
		}
	}
	for k, code := range found {
		if conformanceCode[k] != code {
			t.Errorf("snippet %s differs from (or is missing in) snippets_test.go", k)
		}
	}
	for k := range conformanceCode {
		if _, ok := found[k]; !ok {
			t.Errorf("snippets_test.go has %s, which no playbook has any more", k)
		}
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	start := time.Now()
	o := tool(t).run(context.Background(), request{
		TimeoutS: 0.5,
		Config: M{"code": "import subprocess, time\n" +
			"subprocess.Popen(['sleep', '30'])\n" +
			"print('started', flush=True)\n" +
			"time.sleep(30)\n"},
	})
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timeout took %s", el)
	}
	if o.Status != types.StatusError || o.Error.Kind != "timeout" || !o.Error.Retryable {
		t.Fatalf("outcome %+v err %+v", o, o.Error)
	}
	if !strings.Contains(strings.ToLower(o.Error.Message), "timeout") || !strings.Contains(o.Logs, "started") {
		t.Fatalf("message %q logs %q", o.Error.Message, o.Logs)
	}
}

func TestBackgroundChildDoesNotDelayResult(t *testing.T) {
	start := time.Now()
	o := run(t, "import subprocess\nsubprocess.Popen(['sleep', '30'])\nresult = 'done'\n", nil, nil)
	eq(t, mustOK(t, o), "done")
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Fatalf("took %s", el)
	}
}

func TestExceptionOutcome(t *testing.T) {
	o := run(t, "x = 1\nraise ValueError('bad value')\n", nil, nil)
	if o.Status != types.StatusError || o.Error.Kind != "python" || o.Error.Retryable ||
		o.Error.Message != "ValueError: bad value" || o.Py == nil || o.Py.ExceptionType != "ValueError" {
		t.Fatalf("outcome %+v err %+v py %+v", o, o.Error, o.Py)
	}
	if !strings.Contains(o.Logs, "Traceback (most recent call last)") ||
		!strings.Contains(o.Logs, `File "<task>", line 2`) ||
		!strings.Contains(o.Logs, "raise ValueError('bad value')") ||
		strings.Contains(o.Logs, "_runner") {
		t.Fatalf("logs %q", o.Logs)
	}
	if o.Result != nil {
		t.Fatalf("result %v", o.Result)
	}
}

func TestExceptionInsideMainAndCustomClass(t *testing.T) {
	o := run(t, "class QuotaExceeded(Exception):\n    pass\n\ndef main():\n    raise QuotaExceeded()\n", nil, nil)
	if o.Status != types.StatusError || o.Py.ExceptionType != "QuotaExceeded" || o.Error.Message != "QuotaExceeded" {
		t.Fatalf("err %+v py %+v", o.Error, o.Py)
	}
}

func TestSyntaxError(t *testing.T) {
	o := run(t, "result = (\n", nil, nil)
	if o.Status != types.StatusError || o.Py.ExceptionType != "SyntaxError" || !strings.HasPrefix(o.Error.Message, "SyntaxError: ") {
		t.Fatalf("err %+v py %+v logs %q", o.Error, o.Py, o.Logs)
	}
}

func TestSysExit(t *testing.T) {
	o := run(t, "import sys\nsys.exit(3)\n", nil, nil)
	if o.Status != types.StatusError || o.Py.ExceptionType != "SystemExit" || o.Error.Message != "SystemExit: 3" {
		t.Fatalf("err %+v", o.Error)
	}
	o = run(t, "import sys\nresult = 5\nsys.exit(0)\n", nil, nil)
	eq(t, mustOK(t, o), int64(5))
}

func TestHardExitWithoutResult(t *testing.T) {
	o := run(t, "import os\nprint('bye', flush=True)\nos._exit(4)\n", nil, nil)
	if o.Status != types.StatusError || o.Error.Kind != "python" || o.Py != nil ||
		!strings.Contains(o.Error.Message, "without reporting a result") || !strings.Contains(o.Error.Message, "exit status 4") {
		t.Fatalf("err %+v", o.Error)
	}
	if o.Logs != "bye\n" {
		t.Fatalf("logs %q", o.Logs)
	}
}

func TestPrintGoesToLogs(t *testing.T) {
	o := run(t, "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nprint('again')\nresult = {'n': 1}\n", nil, nil)
	eq(t, mustOK(t, o), M{"n": int64(1)})
	if o.Logs != "to stdout\nto stderr\nagain\n" {
		t.Fatalf("logs %q", o.Logs)
	}
}

func TestLogsKeepTail(t *testing.T) {
	o := run(t, "for i in range(20000):\n    print('line %06d' % i)\nresult = 1\n", nil, nil)
	mustOK(t, o)
	if len(o.Logs) > DefaultMaxLogBytes+100 || !strings.HasSuffix(o.Logs, "line 019999\n") ||
		!strings.HasPrefix(o.Logs, "[... ") || strings.Contains(o.Logs, "line 000000") {
		t.Fatalf("logs: len %d, head %q, tail %q", len(o.Logs), o.Logs[:80], o.Logs[len(o.Logs)-40:])
	}
}

func TestMainConventions(t *testing.T) {
	cases := []struct {
		code string
		args M
		want any
	}{
		{"def main(a, b):\n    return a + b\n", M{"a": int64(1), "b": int64(2), "c": "unused"}, int64(3)},
		{"def main(**kwargs):\n    return sorted(kwargs)\n", M{"y": 1, "x": 2}, L{"x", "y"}},
		{"def main(input_data):\n    return input_data['x'] * 10\n", M{"x": int64(4)}, int64(40)},
		{"def main(a, scale=3, *rest, **kw):\n    return a * scale\n", M{"a": int64(2)}, int64(6)},
		{"def main():\n    return 'no args'\n", M{"a": 1}, "no args"},
		// result set: main is not called.
		{"def main():\n    raise RuntimeError('must not run')\nresult = 'set'\n", nil, "set"},
		// main defined in a wrapped (top-level return) body, no explicit value returned.
		{"def main(a):\n    return a + 1\nif a > 100:\n    return 'big'\n", M{"a": int64(1)}, int64(2)},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			eq(t, mustOK(t, run(t, c.code, c.args, nil)), c.want)
		})
	}
	o := run(t, "def main(a, b):\n    return a\n", M{"a": 1}, nil)
	if o.Status != types.StatusError || o.Py.ExceptionType != "TypeError" || !strings.Contains(o.Error.Message, "'b'") {
		t.Fatalf("missing main arg: %+v", o.Error)
	}
}

func TestTopLevelReturnAndArgRebinding(t *testing.T) {
	cases := []struct {
		code string
		args M
		want any
	}{
		{"x = x + 1\nreturn x\n", M{"x": int64(1)}, int64(2)},
		{"x = x + 1\nresult = x\n", M{"x": int64(1)}, int64(2)},
		{"result = 'from result'\nif flag:\n    return\n", M{"flag": true}, "from result"},
		{"result = 'ignored'\nreturn {'r': 1}\n", nil, M{"r": int64(1)}},
		{"def helper(v):\n    return v * factor\nfactor = 3\nreturn helper(n)\n", M{"n": int64(5)}, int64(15)},
		{"from __future__ import annotations\ndef f(a: Undefined) -> int:\n    return a\nreturn f(2)\n", nil, int64(2)},
		{"s = '''a\n  b'''\nreturn s\n", nil, "a\n  b"},
		{"return input_data\n", M{"k": "v", "not-an-identifier": int64(1)}, M{"k": "v", "not-an-identifier": int64(1)}},
		{"result = [n for n in range(k)]\n", M{"k": int64(3)}, L{int64(0), int64(1), int64(2)}},
		{"total = 0\ndef add(v):\n    global total\n    total += v\nadd(k)\nresult = total\n", M{"k": int64(4)}, int64(4)},
		{"pass\n", nil, nil},
		// An arg named result is only the output when the code uses it.
		{"def main(result):\n    return result + 1\n", M{"result": int64(1)}, int64(2)},
		{"result = result * 3\n", M{"result": int64(2)}, int64(6)},
		{"x = 1\n", M{"result": "arg"}, nil},
		{"def main(result):\n    return result * 2\nif False:\n    return 0\n", M{"result": int64(4)}, int64(8)},
		{"if result:\n    return\n", M{"result": "arg"}, "arg"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			eq(t, mustOK(t, run(t, c.code, c.args, nil)), c.want)
		})
	}
	// A traceback from a wrapped body points at the user's line.
	o := run(t, "a = 1\nb = 0\nreturn a / b\n", nil, nil)
	if o.Status != types.StatusError || o.Py.ExceptionType != "ZeroDivisionError" || !strings.Contains(o.Logs, `File "<task>", line 3`) {
		t.Fatalf("err %+v logs %q", o.Error, o.Logs)
	}
}

func TestIntsAndConversions(t *testing.T) {
	o := run(t, `import datetime, decimal, uuid
result = {
    "i": i, "ti": type(i).__name__, "f": f, "tf": type(f).__name__,
    "big": big, "fl": 2.0, "neg": -7,
    "set": {3, 1, 2}, "tuple": (1, "a"),
    "date": datetime.date(2024, 1, 2),
    "dt": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "dec": decimal.Decimal("1.5"), "deci": decimal.Decimal("12"),
    "nan": float("nan"), "bytes": b"hi",
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    1: "int key", None: "none key",
    "obj": object.__new__(type("Thing", (), {"__repr__": lambda s: "Thing()", "__str__": lambda s: "a thing"})),
    "nested": {"l": [{"x": 1}]},
}
`, M{"i": int64(7), "f": 2.5, "big": int64(1<<53 + 1)}, nil)
	eq(t, mustOK(t, o), M{
		"i": int64(7), "ti": "int", "f": 2.5, "tf": "float",
		"big": int64(1<<53 + 1), "fl": 2.0, "neg": int64(-7),
		"set": L{int64(1), int64(2), int64(3)}, "tuple": L{int64(1), "a"},
		"date": "2024-01-02", "dt": "2024-01-02T03:04:05+00:00",
		"dec": 1.5, "deci": int64(12), "nan": nil, "bytes": "hi",
		"uuid": "12345678-1234-5678-1234-567812345678",
		"1":    "int key", "null": "none key",
		"obj":    "a thing",
		"nested": M{"l": L{M{"x": int64(1)}}},
	})
	// Go ints of every width arrive as Python ints.
	o = run(t, "result = [type(v).__name__ for v in vals]\n", M{"vals": L{1, int32(2), int64(3), uint8(4), 5.5}}, nil)
	eq(t, mustOK(t, o), L{"int", "int", "int", "int", "float"})
}

func TestEnvironmentNotLeaked(t *testing.T) {
	t.Setenv("NOETL_TEST_SECRET", "hunter2-very-secret")
	o := run(t, "import os\nresult = {'env': dict(os.environ), 'cwd': os.getcwd(), 'home': os.path.expanduser('~')}\n", nil, nil)
	r := mustOK(t, o).(M)
	env := r["env"].(M)
	for k, v := range env {
		if strings.Contains(fmt.Sprint(v), "hunter2") || k == "NOETL_TEST_SECRET" {
			t.Fatalf("engine environment leaked: %s=%v", k, v)
		}
		switch k {
		case "PATH", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "HOME", "TMPDIR", "LC_CTYPE":
		default:
			t.Errorf("unexpected variable %s in the task environment", k)
		}
	}
	cwd := r["cwd"].(string)
	if env["HOME"] != cwd || r["home"] != cwd {
		t.Fatalf("HOME %v, cwd %v", env["HOME"], cwd)
	}
	if _, err := os.Stat(cwd); !os.IsNotExist(err) {
		t.Fatalf("working directory %s not removed (err %v)", cwd, err)
	}
}

func TestLibs(t *testing.T) {
	o := run(t, "result = {'j': j.dumps([1]), 'p': p.join('a', 'b'), 'm': math.floor(2.5)}\n", nil,
		M{"libs": M{"j": "json", "p": "os.path", "math": "math"}})
	eq(t, mustOK(t, o), M{"j": "[1]", "p": "a/b", "m": int64(2)})
	o = run(t, "result = os.path.basename('/x/y')\n", nil, M{"libs": L{"os.path"}})
	eq(t, mustOK(t, o), "y")
	o = run(t, "result = 1\n", nil, M{"libs": M{"nope": "no_such_module_xyz"}})
	if o.Status != types.StatusError || o.Py.ExceptionType != "ModuleNotFoundError" {
		t.Fatalf("err %+v", o.Error)
	}
}

func TestStdinIsEmptyAndConfigErrors(t *testing.T) {
	eq(t, mustOK(t, run(t, "import sys\nresult = sys.stdin.read()\n", nil, nil)), "")
	o := tool(t).run(context.Background(), request{Config: M{}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("missing code: %+v", o.Error)
	}
	o = run(t, "result = 1\n", M{"bad": make(chan int)}, nil)
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("bad args: %+v", o.Error)
	}
	bad := New(Options{Interpreter: "/nonexistent/python3"})
	o = bad.run(context.Background(), request{Config: M{"code": "result = 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "not found") {
		t.Fatalf("bad interpreter: %+v", o.Error)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	o := tool(t).run(ctx, request{Config: M{"code": "import time\ntime.sleep(30)\n"}})
	if o.Status != types.StatusError || o.Error.Kind != "canceled" {
		t.Fatalf("err %+v", o.Error)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 10}
	for i := 0; i < 100; i++ {
		fmt.Fprintf(b, "%d,", i%10)
	}
	if got := b.String(); !strings.HasSuffix(got, "5,6,7,8,9,") || !strings.HasPrefix(got, "[... 190 bytes") {
		t.Fatalf("%q", got)
	}
	b = &tailBuffer{max: 4}
	b.Write([]byte("aé€")) // 1+2+3 bytes; keeping 4 would split the euro sign's lead? no: keeps "é€"'s tail
	if got := b.String(); !strings.HasSuffix(got, "€") || strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("%q", got)
	}
}

// BenchmarkPythonNoop measures the per-attempt overhead of the python kind:
// temp dir, process start, runner, result channel, cleanup.
func BenchmarkPythonNoop(b *testing.B) {
	tl := tool(b)
	req := request{Args: M{"x": 1}, Config: M{"code": "result = x\n"}}
	for b.Loop() {
		o := tl.run(context.Background(), req)
		if o.Status != types.StatusOK {
			b.Fatalf("%+v", o.Error)
		}
	}
}
