package allkinds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/kinds"
	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/python"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
	"github.com/noetl/gcpengine/shared/types"
)

func TestDefault(t *testing.T) {
	reg, closeFn := Default(kinds.Options{PythonBin: "python3"})
	defer closeFn()
	for _, k := range tools.Kinds {
		if reg[k] == nil {
			t.Fatalf("kind %s missing", k)
		}
	}
	if len(reg) != len(tools.Kinds) || len(tools.Kinds) != 14 {
		t.Fatalf("registry has %d kinds, tools.Kinds %d", len(reg), len(tools.Kinds))
	}
	ctx := context.Background()
	if o := reg[tools.KindNoop].Run(ctx, tools.Request{Config: map[string]any{"result": 1}}); o.Status != types.StatusOK || o.Result != 1 {
		t.Fatalf("noop %+v", o)
	}
	if o := reg[tools.KindNoop].Run(ctx, tools.Request{Args: map[string]any{"a": 1}}); o.Result.(map[string]any)["a"] != 1 {
		t.Fatalf("noop args %+v", o)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) }))
	defer srv.Close()
	if o := reg[tools.KindHTTP].Run(ctx, tools.Request{Config: map[string]any{"url": srv.URL}}); o.Status != types.StatusOK {
		t.Fatalf("http %+v", o.Error)
	}
	// Args, Config and TimeoutS reach the kind.
	if o := reg[tools.KindPython].Run(ctx, tools.Request{Args: map[string]any{"x": 2}, Config: map[string]any{"code": "result = x * 2"}}); o.Status != types.StatusOK || o.Result != int64(4) {
		t.Fatalf("python %+v %+v", o, o.Error)
	}
	if o := reg[tools.KindPython].Run(ctx, tools.Request{TimeoutS: 0.2, Config: map[string]any{"code": "import time\ntime.sleep(5)"}}); o.Status != types.StatusError || o.Error.Kind != "timeout" {
		t.Fatalf("python timeout %+v", o.Error)
	}
	if o := reg[tools.KindPostgres].Run(ctx, tools.Request{Config: map[string]any{"command": "SELECT 1"}}); o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("postgres without connection %+v", o.Error)
	}
}

func TestDefaultPythonBin(t *testing.T) {
	reg, closeFn := Default(kinds.Options{PythonBin: "/nonexistent/python3"})
	defer closeFn()
	o := reg[tools.KindPython].Run(context.Background(), tools.Request{Config: map[string]any{"code": "result = 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
}

// TestDefaultWiring: the credential store, the results store and the
// project reach the kinds that use them; every new kind answers through
// the registry.
func TestDefaultWiring(t *testing.T) {
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "1"})
	store := credentials.NewMemory()
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "api", Kind: "http_bearer", Data: map[string]any{"token": "tok-9"}}); err != nil {
		t.Fatal(err)
	}
	rs := &results.Store{Backend: results.NewMemory()}
	big := map[string]any{"blob": strings.Repeat("x", 70000)}
	ref, err := rs.Offload(ctx, types.ResultCoords{ExecutionID: "1", Step: "s"}, big)
	if err != nil || ref == nil {
		t.Fatalf("offload %v %v", ref, err)
	}
	t.Setenv("NOETL_SECRETS_ENV_ALLOW", "MY_TOKEN, OTHER_*")
	t.Setenv("MY_TOKEN", "from-env")
	reg, closeFn := Default(kinds.Options{Credentials: store, Results: rs})
	defer closeFn()
	if o := reg[tools.KindSecrets].Run(ctx, tools.Request{Config: map[string]any{"key": "api"}}); o.Status != types.StatusOK || o.Result.(map[string]any)["token"] != "tok-9" {
		t.Fatalf("secrets credential %+v %v", o.Error, o.Result)
	}
	if o := reg[tools.KindSecrets].Run(ctx, tools.Request{Config: map[string]any{"provider": "env", "key": "MY_TOKEN"}}); o.Status != types.StatusOK || o.Result.(map[string]any)["value"] != "from-env" {
		t.Fatalf("secrets env %+v", o.Error)
	}
	for _, k := range []string{tools.KindArtifact, tools.KindResultFetch} {
		o := reg[k].Run(ctx, tools.Request{Args: map[string]any{"result_ref": ref}, Config: map[string]any{"action": "get"}})
		if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, big) {
			t.Fatalf("%s %+v", k, o.Error)
		}
	}
	if o := reg[tools.KindShell].Run(ctx, tools.Request{Config: map[string]any{"command": "echo $X", "env": map[string]any{"X": "y"}}}); o.Status != types.StatusOK || o.Result.(map[string]any)["stdout"] != "y\n" {
		t.Fatalf("shell %+v", o.Error)
	}
	if o := reg[tools.KindDuckDB].Run(ctx, tools.Request{Config: map[string]any{"query": "SELECT 41 + 1 AS n"}}); duckdb.Available && (o.Status != types.StatusOK || o.Result.(map[string]any)["rows"].([]any)[0].(map[string]any)["n"] != int64(42)) {
		t.Fatalf("duckdb %+v", o.Error)
	}
	// Kinds that need a service fail with config errors naming what is
	// missing, not with panics.
	for k, cfg := range map[string]map[string]any{
		tools.KindNATS:         {"operation": "kv_get", "bucket": "b", "key": "k"},
		tools.KindSubscription: {"source": "pubsub"},
		tools.KindTransfer:     {},
		tools.KindGCS:          {"action": "list"},
	} {
		if o := reg[k].Run(ctx, tools.Request{Config: cfg}); o.Status != types.StatusError || o.Error.Kind != "config" {
			t.Errorf("%s: %+v", k, o.Error)
		}
	}
}

func TestDefaultPythonInterpreter(t *testing.T) {
	reg, closeFn := Default(kinds.Options{})
	defer closeFn()
	o := reg[tools.KindPython].Run(context.Background(), tools.Request{Config: map[string]any{"code": "import sys\nresult = sys.executable"}})
	if o.Status != types.StatusOK {
		t.Fatalf("%+v", o.Error)
	}
	if want := python.PreferredInterpreter(); want == python.SystemInterpreter && o.Result != want {
		t.Fatalf("interpreter %v, want %s", o.Result, want)
	}
}

// The planes' registries: the control plane builds its own kinds only, the
// runner the kinds that run author code or reach author-chosen endpoints;
// together they are every kind, and neither holds a kind of the other.
func TestControlAndRunnerKinds(t *testing.T) {
	ctl, closeCtl := controlkinds.Control(controlkinds.Options{})
	defer closeCtl()
	run, closeRun := kinds.Runner(kinds.Options{PythonBin: "python3"})
	defer closeRun()
	var all []string
	for k := range ctl {
		all = append(all, k)
		if run[k] != nil {
			t.Errorf("kind %s is in both planes", k)
		}
	}
	for k := range run {
		all = append(all, k)
	}
	if len(ctl) != len(tools.ControlKinds) || len(run) != len(tools.RunnerKinds) || len(all) != len(tools.Kinds) {
		t.Fatalf("control %d, runner %d, all %d kinds; want %d, %d, %d", len(ctl), len(run), len(all), len(tools.ControlKinds), len(tools.RunnerKinds), len(tools.Kinds))
	}
	for _, k := range []string{tools.KindPython, tools.KindShell, tools.KindDuckDB, tools.KindPostgres, tools.KindTransfer, tools.KindGCS, tools.KindNATS, tools.KindSubscription} {
		if ctl[k] != nil || run[k] == nil {
			t.Errorf("kind %s must run in the runner only", k)
		}
	}
	for _, k := range []string{tools.KindNoop, tools.KindHTTP, tools.KindSecrets, tools.KindArtifact, tools.KindResultFetch} {
		if ctl[k] == nil || run[k] != nil {
			t.Errorf("kind %s must run in the control plane only", k)
		}
	}
}
