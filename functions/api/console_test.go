package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/functions/api/console"
	"github.com/noetl/gcpengine/shared/auth"
)

// The console reaches the api's routes in process as its visitor: the
// route's role (RequiredRole) is checked before the route runs, as the
// guard checks it for an HTTP caller, and the body limit holds.
func TestConsoleBackendGuard(t *testing.T) {
	b := consoleBackend{}
	as := func(role auth.Role) context.Context {
		return auth.WithPrincipal(context.Background(), auth.Principal{Name: "ada@example.com", Role: role})
	}
	for _, c := range []struct {
		name         string
		ctx          context.Context
		method, path string
		body         string
		code         int
		errPart      string
	}{
		{"no principal", context.Background(), "GET", "/executions/x", "", 401, "unauthenticated"},
		{"viewer cancels", as(auth.Viewer), "POST", "/executions/x/cancel", "{}", 403, "ada@example.com has role viewer; POST /executions/x/cancel needs runner"},
		{"runner reads the DLQ", as(auth.Runner), "GET", "/dlq?limit=5", "", 403, "needs operator"},
		{"runner replays", as(auth.Runner), "POST", "/dlq/d1/replay", "{}", 403, "needs operator"},
		{"public route", context.Background(), "GET", "/healthz", "", 200, ""},
		{"too large", as(auth.Admin), "POST", "/executions", strings.Repeat("x", MaxBody+1), 413, "over the limit"},
		{"not a path", as(auth.Admin), "GET", "http://elsewhere/executions", "", 400, ""},
	} {
		code, body := b.Call(c.ctx, c.method, c.path, []byte(c.body))
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.code)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("%s: not JSON: %s", c.name, body)
		}
		if e, _ := m["error"].(string); !strings.Contains(e, c.errPart) {
			t.Errorf("%s: error %q lacks %q", c.name, e, c.errPart)
		}
	}
	// Source and Events are refused like GET /executions/{id}.
	for _, f := range []func() error{
		func() error { _, err := b.Source(context.Background(), "x"); return err },
		func() error { _, _, err := b.Events(as(auth.None), "x"); return err },
	} {
		var ce *console.Error
		if err := f(); !errors.As(err, &ce) || (ce.Code != http.StatusUnauthorized && ce.Code != http.StatusForbidden) {
			t.Errorf("a read without a viewer: %v", err)
		}
	}
	if !isConsole("/console/") || !isConsole("/api/console/executions/x") || isConsole("/executions") {
		t.Error("isConsole")
	}
}
