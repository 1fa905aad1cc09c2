package tools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

func TestDefault(t *testing.T) {
	reg, closeFn := Default(DefaultOptions{PythonBin: "python3"})
	defer closeFn()
	for _, k := range []string{KindNoop, KindHTTP, KindPython, KindPostgres} {
		if reg[k] == nil {
			t.Fatalf("kind %s missing", k)
		}
	}
	if len(reg) != 4 {
		t.Fatalf("registry has %d kinds", len(reg))
	}
	ctx := context.Background()
	if o := reg[KindNoop].Run(ctx, Request{Config: map[string]any{"result": 1}}); o.Status != types.StatusOK || o.Result != 1 {
		t.Fatalf("noop %+v", o)
	}
	if o := reg[KindNoop].Run(ctx, Request{Args: map[string]any{"a": 1}}); o.Result.(map[string]any)["a"] != 1 {
		t.Fatalf("noop args %+v", o)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) }))
	defer srv.Close()
	if o := reg[KindHTTP].Run(ctx, Request{Config: map[string]any{"url": srv.URL}}); o.Status != types.StatusOK {
		t.Fatalf("http %+v", o.Error)
	}
	// Args, Config and TimeoutS reach the kind.
	if o := reg[KindPython].Run(ctx, Request{Args: map[string]any{"x": 2}, Config: map[string]any{"code": "result = x * 2"}}); o.Status != types.StatusOK || o.Result != int64(4) {
		t.Fatalf("python %+v %+v", o, o.Error)
	}
	if o := reg[KindPython].Run(ctx, Request{TimeoutS: 0.2, Config: map[string]any{"code": "import time\ntime.sleep(5)"}}); o.Status != types.StatusError || o.Error.Kind != "timeout" {
		t.Fatalf("python timeout %+v", o.Error)
	}
	if o := reg[KindPostgres].Run(ctx, Request{Config: map[string]any{"command": "SELECT 1"}}); o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("postgres without connection %+v", o.Error)
	}
}

func TestDefaultPythonBin(t *testing.T) {
	reg, closeFn := Default(DefaultOptions{PythonBin: "/nonexistent/python3"})
	defer closeFn()
	o := reg[KindPython].Run(context.Background(), Request{Config: map[string]any{"code": "result = 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
}
