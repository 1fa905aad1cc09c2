package python

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/noetl/gcpengine/runner/kinds/gcsconn"
	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/shared/types"
)

// greeter has the shape of NoETL's script_execution/scripts/hello_world.py:
// main(name, count) returning a mapping.
const greeter = `
def main(name="World", count=1):
    messages = [f"Hello, {name}! (Greeting #{i+1})" for i in range(count)]
    return {"status": "success", "messages": messages, "total_greetings": count, "script_source": "file"}
`

func scriptTool(t *testing.T, o script.Options) *Tool {
	t.Helper()
	tl := New(Options{Scripts: o})
	if _, err := tl.Interpreter(); err != nil {
		t.Fatalf("python3 is required: %v", err)
	}
	return tl
}

// TestScriptFile is python_file_example.yaml's run_python_from_file step:
// script {uri, source: {type: file}} with input name and count.
func TestScriptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hello_world.py"), []byte(greeter), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := scriptTool(t, script.Options{BaseDir: dir})
	args := M{"name": "NoETL", "count": int64(3)}
	for _, cfg := range []M{
		{"script": M{"uri": filepath.Join(dir, "scripts", "hello_world.py"), "source": M{"type": "file"}}},
		{"script": M{"uri": "scripts/hello_world.py", "source": M{"type": "file"}}}, // relative to BaseDir
		{"script": M{"path": "./scripts/hello_world.py"}},                           // type from the uri
		{"script": "scripts/hello_world.py", "code": "result = 'ignored'"},          // script wins
	} {
		o := tl.run(context.Background(), request{Args: args, Config: cfg})
		r := mustOK(t, o).(M)
		if r["status"] != "success" || r["total_greetings"] != int64(3) || len(r["messages"].(L)) != 3 || r["script_source"] != "file" {
			t.Fatalf("%v: %#v", cfg, r)
		}
	}
	o := tl.run(context.Background(), request{Config: M{"script": M{"uri": "scripts/missing.py", "source": M{"type": "file"}}}})
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "missing.py") {
		t.Fatalf("%+v", o.Error)
	}
}

func TestScriptInlineAndErrors(t *testing.T) {
	tl := scriptTool(t, script.Options{})
	o := tl.run(context.Background(), request{Args: M{"x": int64(2)}, Config: M{"script": M{"source": M{"type": "inline", "code": "result = x * 21"}}}})
	if mustOK(t, o) != int64(42) {
		t.Fatalf("%#v", o.Result)
	}
	for _, cfg := range []M{
		{"script": 5},
		{"script": M{"source": "file"}},
		{"script": M{"uri": "x.py", "source": M{"type": "ftp"}}},
		{"script": M{"uri": "s3:///x.py", "source": M{"type": "s3"}}}, // no bucket
		{"script": M{"source": M{"type": "inline"}}},
		{"script": M{"uri": "gs://b/x.py"}}, // no GCS configured
		{"script": M{"uri": "x.py", "encoding": "latin-1"}},
		{"code": "result = 1", "libs": M{"d": M{"from": "datetime"}}},
	} {
		o := tl.run(context.Background(), request{Config: cfg})
		if o.Status != types.StatusError || o.Error.Kind != "config" {
			t.Errorf("%v: %+v", cfg, o.Error)
		}
	}
}

func TestScriptHTTP(t *testing.T) {
	var fails int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.py":
			if r.Header.Get("X-Key") != "k1" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			w.Write([]byte(greeter))
		case "/flaky.py":
			fails++
			http.Error(w, "down", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tl := scriptTool(t, script.Options{})
	o := tl.run(context.Background(), request{Args: M{"name": "H", "count": int64(1)}, Config: M{"script": M{"uri": "ignored", "source": M{"type": "http", "endpoint": srv.URL + "/ok.py", "headers": M{"X-Key": "k1"}}}}})
	if r := mustOK(t, o).(M); r["total_greetings"] != int64(1) {
		t.Fatalf("%#v", r)
	}
	o = tl.run(context.Background(), request{Config: M{"script": M{"uri": srv.URL + "/flaky.py"}}})
	if o.Status != types.StatusError || o.Error.Kind != "http" || !o.Error.Retryable || o.Error.Status != 503 {
		t.Fatalf("%+v", o.Error)
	}
	o = tl.run(context.Background(), request{Config: M{"script": M{"uri": srv.URL + "/nope.py"}}})
	if o.Status != types.StatusError || o.Error.Kind != "not_found" || o.Error.Retryable {
		t.Fatalf("%+v", o.Error)
	}
	o = tl.run(context.Background(), request{Config: M{"script": M{"uri": srv.URL + "/ok.py"}}})
	if o.Status != types.StatusError || o.Error.Kind != "http" || o.Error.Retryable || o.Error.Status != 401 {
		t.Fatalf("%+v", o.Error)
	}
}

// TestScriptGCS reads a script object through the storage client (an
// in-process fake-gcs-server here; the stack test uses the stack's).
func TestScriptGCS(t *testing.T) {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0,
		InitialObjects: []fakestorage.Object{{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "scripts", Name: "py/hello.py"}, Content: []byte(greeter)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	clients := &gcsconn.Clients{}
	defer clients.Close()
	tl := scriptTool(t, script.Options{GCS: clients})
	o := tl.run(context.Background(), request{Args: M{"count": int64(2)}, Config: M{"script": M{"uri": "gs://scripts/py/hello.py", "source": M{"type": "gcs", "auth": M{"endpoint": srv.URL()}}}}})
	if r := mustOK(t, o).(M); r["total_greetings"] != int64(2) {
		t.Fatalf("%#v", r)
	}
	o = tl.run(context.Background(), request{Config: M{"script": M{"uri": "gs://scripts/py/none.py", "source": M{"type": "gcs", "auth": M{"endpoint": srv.URL()}}}}})
	if o.Status != types.StatusError || o.Error.Kind != "not_found" {
		t.Fatalf("%+v", o.Error)
	}
}

// TestLibsFromImport: NoETL's {alias: {from, import}} libs form.
func TestLibsFromImport(t *testing.T) {
	o := run(t, "result = [dt(2024, 1, 2).year, jp('a', 'b'), js.dumps([1])]", nil,
		M{"libs": M{"dt": M{"from": "datetime", "import": "datetime"}, "jp": M{"from": "os.path", "import": "join"}, "js": "json"}})
	eq(t, mustOK(t, o), L{int64(2024), "a/b", "[1]"})
	o = run(t, "result = 1", nil, M{"libs": M{"x": M{"from": "datetime", "import": "nothing_here"}}})
	if o.Status != types.StatusError || o.Py == nil || o.Py.ExceptionType != "ModuleNotFoundError" {
		t.Fatalf("%+v %+v", o.Error, o.Py)
	}
}

// TestPsycopgImportable: with no interpreter configured the tool prefers
// the system python, which sees Debian's python3-psycopg2 and
// python3-psycopg (installed by scripts/up).
func TestPsycopgImportable(t *testing.T) {
	if PreferredInterpreter() != SystemInterpreter {
		t.Skipf("%s is not installed", SystemInterpreter)
	}
	tl := New(Options{Interpreter: PreferredInterpreter()})
	o := tl.run(context.Background(), request{Config: M{"code": "import psycopg2, psycopg\nresult = [psycopg2.__name__, psycopg.__name__]", "libs": M{"pg2": "psycopg2"}}})
	if o.Status != types.StatusOK {
		t.Fatalf("psycopg/psycopg2 not importable with %s (install python3-psycopg2 python3-psycopg): %+v\n%s", SystemInterpreter, o.Error, o.Logs)
	}
	eq(t, o.Result, L{"psycopg2", "psycopg"})
}

func TestCodeB64(t *testing.T) {
	tl := scriptTool(t, script.Options{})
	o := tl.run(context.Background(), request{Config: M{"code_b64": "cmVzdWx0ID0gNiAqIDc="}}) // result = 6 * 7
	if mustOK(t, o) != int64(42) {
		t.Fatalf("%#v", o.Result)
	}
	o = tl.run(context.Background(), request{Config: M{"code_b64": "not base64!"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
}
