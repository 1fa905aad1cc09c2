package e2e

import (
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// devService starts a little HTTP service of "the developer" on addr
// (127.0.0.1:0 for any port) answering {"hello": "developer"}, and counts
// the requests it receives.
func devService(t *testing.T, addr string) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"hello": "developer", "path": "` + r.URL.Path + `"}`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), &hits
}

// A playbook calls a service of the developer's own on 127.0.0.1:PORT once
// the stack was started with scripts/up --allow 127.0.0.1:PORT: from the
// control plane (an http task) and from the runner (python through its
// sandbox's proxy), the service counting both requests. A service on a
// port nobody allowed is refused before any request reaches it, and the
// error tells how to allow it. scripts/test starts the stack with
// --allow $NOETL_E2E_DEV_SERVICE (a free port it picks).
func TestDeveloperEgress(t *testing.T) {
	RequireStack(t)
	allowed := os.Getenv("NOETL_E2E_DEV_SERVICE")
	if allowed == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_E2E_DEV_SERVICE is unset: scripts/test starts the stack with scripts/up --allow $NOETL_E2E_DEV_SERVICE")
		}
		t.Skip("set NOETL_E2E_DEV_SERVICE=127.0.0.1:PORT and run scripts/up --allow 127.0.0.1:PORT (scripts/test does)")
	}
	if !strings.Contains(","+os.Getenv("NOETL_EGRESS_ALLOW")+",", ","+allowed+",") {
		t.Fatalf("the stack does not allow %s (NOETL_EGRESS_ALLOW=%s): start it with scripts/up --allow %s", allowed, os.Getenv("NOETL_EGRESS_ALLOW"), allowed)
	}
	addr, hits := devService(t, allowed)

	p := attack(t, "dev_http", map[string]any{"kind": "http", "url": "http://" + addr + "/from-http", "timeout": 10}, nil)
	if p.Status != "ok" || !strings.Contains(MustJSON(p.Result), `"hello":"developer"`) {
		t.Errorf("http → the developer's %s: %s %s %q %s", addr, p.Status, p.Kind, p.Error, MustJSON(p.Result))
	}
	p = attack(t, "dev_python", map[string]any{"kind": "python", "args": map[string]any{"url": "http://" + addr + "/from-python"}, "code": `
import json, urllib.request
with urllib.request.urlopen(url, timeout=10) as r:
    result = json.load(r)
`}, nil)
	if p.Status != "ok" || !strings.Contains(MustJSON(p.Result), `"path":"/from-python"`) {
		t.Errorf("python → the developer's %s: %s %s %q %s", addr, p.Status, p.Kind, p.Error, MustJSON(p.Result))
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the developer's service received %d requests, want 2 (http and python)", n)
	}

	// A port nobody allowed: refused, nothing arrives, the error says how.
	other, otherHits := devService(t, "127.0.0.1:0")
	p = attack(t, "dev_refused", map[string]any{"kind": "http", "url": "http://" + other + "/nope", "timeout": 10}, nil)
	refused(t, "http → an unallowed "+other, p, "forbidden_address", "to allow it on the local stack: scripts/up --allow "+other)
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the refused service received %d requests", n)
	}
	// The engine's own endpoints stay refused, and say they cannot be
	// allowed.
	fn := "127.0.0.1:" + os.Getenv("NOETL_FUNCTIONS_PORT")
	p = attack(t, "dev_engine", map[string]any{"kind": "http", "url": "http://" + fn + "/api/healthz", "timeout": 10}, nil)
	refused(t, "http → the functions host", p, "forbidden_address", "it cannot be allowed")
}
