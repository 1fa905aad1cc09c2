package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/auth"
)

// withAuth installs an authenticator with three static-token principals
// for the test: the token's role comes from the roles file.
func withAuth(t *testing.T, role string) {
	t.Helper()
	roles, err := auth.ParseRoles([]byte(role + ": [token]"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{Token: "tok-0123456789abcdef", Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	setForTest(t, &authMu, &authenticator, a)
}

// setForTest sets *p to v under mu for the test's duration (an
// instance-wide value such as the authenticator or the credential store).
func setForTest[T any](t *testing.T, mu *sync.Mutex, p *T, v T) {
	t.Helper()
	mu.Lock()
	prev := *p
	*p = v
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		*p = prev
		mu.Unlock()
	})
}

func serve(method, path, token, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	API(w, r)
	return w
}

// Every route of the api is guarded by one wrapper: no credentials or bad
// ones → 401, a role below the route's → 403; a role that suffices gets
// past the guard (the handler then answers; without a runtime here it is
// a 5xx, never 401/403).
func TestGuardRoles(t *testing.T) {
	routes := []struct {
		method, path string
		need         auth.Role
	}{
		{"GET", "/api/executions", auth.Viewer},
		{"GET", "/api/executions/x", auth.Viewer},
		{"GET", "/api/executions/x/events", auth.Viewer},
		{"GET", "/api/executions/x/cost", auth.Viewer},
		{"GET", "/api/playbooks", auth.Viewer},
		{"POST", "/api/executions", auth.Runner},
		{"POST", "/api/executions/x/cancel", auth.Runner},
		{"POST", "/api/executions/x/rerun", auth.Runner},
		{"POST", "/api/playbooks", auth.Admin},
		{"GET", "/api/credentials", auth.Admin},
		{"POST", "/api/credentials", auth.Admin},
		{"DELETE", "/api/credentials/pg", auth.Admin},
		{"GET", "/api/dlq", auth.Operator},
		{"GET", "/api/dlq/x", auth.Operator},
		{"POST", "/api/dlq/x/replay", auth.Operator},
		{"POST", "/api/dlq/x/discard", auth.Operator},
		{"POST", "/api/executions/1/rebuild", auth.Operator},
		{"POST", "/api/executions/1/steps/load/complete", auth.Admin},
		{"POST", "/api/executions/1/steps/load/fail", auth.Admin},
		{"POST", "/api/gc", auth.Admin},
		{"POST", "/api/results/verify", auth.Admin},
		{"POST", "/api/results/repair", auth.Admin},
		{"GET", "/api/credentials/pg", auth.Admin},
		{"POST", "/api/subscriptions", auth.Admin},
		{"DELETE", "/api/subscriptions/s", auth.Admin},
		{"GET", "/api/subscriptions", auth.Viewer},
		{"DELETE", "/api/executions/x", auth.Admin},
	}
	for _, role := range []auth.Role{auth.Viewer, auth.Runner, auth.Operator, auth.Admin} {
		withAuth(t, role.String())
		for _, rt := range routes {
			if w := serve(rt.method, rt.path, "", "{}"); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s without a token: %d, want 401 with WWW-Authenticate", rt.method, rt.path, w.Code)
			}
			if w := serve(rt.method, rt.path, "wrong", "{}"); w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with a wrong token: %d, want 401", rt.method, rt.path, w.Code)
			}
			w := serve(rt.method, rt.path, "tok-0123456789abcdef", "{}")
			if role < rt.need && w.Code != http.StatusForbidden {
				t.Errorf("%s %s as %s: %d, want 403", rt.method, rt.path, role, w.Code)
			}
			if role >= rt.need && (w.Code == http.StatusForbidden || w.Code == http.StatusUnauthorized) {
				t.Errorf("%s %s as %s: %d %s, want past the guard", rt.method, rt.path, role, w.Code, w.Body)
			}
		}
	}
	if w := serve("GET", "/api/healthz", "", ""); w.Code != http.StatusOK {
		t.Errorf("healthz must stay public, got %d", w.Code)
	}
}

// A body over MaxBody is refused with 413 — declared by Content-Length or
// discovered while reading — and never reaches a handler truncated.
func TestGuardBodyLimit(t *testing.T) {
	withAuth(t, "admin")
	big := strings.Repeat("x", MaxBody+1)
	for _, path := range []string{"/api/executions", "/api/playbooks", "/api/credentials"} {
		if w := serve("POST", path, "tok-0123456789abcdef", big); w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "over the limit") {
			t.Errorf("POST %s with %d bytes: %d %s, want 413", path, len(big), w.Code, w.Body)
		}
		// Unknown length (chunked): cut while reading, still 413.
		r := httptest.NewRequest("POST", path, strings.NewReader(big))
		r.ContentLength = -1
		r.Header.Set("Authorization", "Bearer tok-0123456789abcdef")
		w := httptest.NewRecorder()
		API(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s chunked with %d bytes: %d, want 413", path, len(big), w.Code)
		}
	}
	// The limit itself is accepted by the guard (the handler decides).
	if w := serve("POST", "/api/credentials", "tok-0123456789abcdef", strings.Repeat(" ", MaxBody)); w.Code == http.StatusRequestEntityTooLarge {
		t.Errorf("a body of exactly MaxBody bytes was refused")
	}
}

// An execution whose document could never be written (playbook and
// workload over control.StateMaxBytes) is refused at start, naming the
// limit.
func TestDocumentFits(t *testing.T) {
	if err := documentFits([]byte("kind: Playbook"), map[string]any{"a": 1}, 0); err != nil {
		t.Fatal(err)
	}
	err := documentFits(make([]byte, 500_000), map[string]any{"blob": strings.Repeat("x", 500_000)}, 0)
	if err == nil || !strings.Contains(err.Error(), "900000-byte limit") {
		t.Fatalf("got %v", err)
	}
}
