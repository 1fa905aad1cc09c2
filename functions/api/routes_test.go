package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRoutes: each request reaches the ServeMux pattern that serves it,
// with or without the "/api" prefix and a trailing slash; what matches
// none (an unknown path, another method, a path the mux would clean) is
// a 404 quoting the path as sent.
func TestRoutes(t *testing.T) {
	for _, c := range []struct{ method, path, pattern string }{
		{"GET", "/api/healthz", "/healthz"},
		{"GET", "/api", "/{$}"},
		{"GET", "/", "/{$}"},
		{"POST", "/api/executions", "POST /executions"},
		{"GET", "/executions/", "GET /executions"},
		{"GET", "/api/executions/914/events", "GET /executions/{id}/events"},
		{"GET", "/api/executions/914/cost", "GET /executions/{id}/cost"},
		{"GET", "/api/executions/914", "GET /executions/{rest...}"},
		{"POST", "/api/executions/914/cancel", "POST /executions/{id}/cancel"},
		{"POST", "/api/executions/914/rerun", "POST /executions/{id}/rerun"},
		{"POST", "/api/executions/914/rebuild", "POST /executions/{id}/rebuild"},
		{"POST", "/api/executions/914/steps/load/complete", "POST /executions/{id}/steps/{rest...}"},
		{"GET", "/api/dlq", "/dlq"},
		{"POST", "/api/dlq/abc/replay", "/dlq/"},
		{"PUT", "/api/credentials/pg", "/credentials/"},
		{"GET", "/api/subscriptions", "/subscriptions"},
		{"GET", "/api/playbooks/a/b", "/playbooks/"},
		{"POST", "/api/gc", "POST /gc"},
		{"GET", "/api/cells", "GET /cells"},
		{"POST", "/api/results/verify", "POST /results/verify"},
		{"GET", "/api/results?urn=x", "GET /results"},
		{"DELETE", "/api/executions", "/"},
		{"GET", "/api/gc", "/"},
		{"GET", "/api/nothing", "/"},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		m := r.Clone(r.Context())
		m.URL.Path, m.URL.RawPath = apiPath(r), ""
		if _, got := apiRoutes.Handler(m); got != c.pattern {
			t.Errorf("%s %s: pattern %q, want %q", c.method, c.path, got, c.pattern)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/executions"},
		{"GET", "/api/nothing"},
		{"GET", "/api/executions//914"},
		{"GET", "/api/executions/../gc"},
		{"POST", "/api/executions/914/steps/load"},
	} {
		w := httptest.NewRecorder()
		route(w, httptest.NewRequest(c.method, "http://h"+c.path, nil))
		var body struct{ Error string }
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if want := "no route for " + c.method + " "; w.Code != http.StatusNotFound || len(body.Error) < len(want) || body.Error[:len(want)] != want {
			t.Errorf("%s %s: %d %q, want 404 no route", c.method, c.path, w.Code, w.Body.String())
		}
	}
}
