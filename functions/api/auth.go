package api

// The api's one guard (README "Security"): every request passes
// Guard before any handler runs. It identifies the caller (shared/auth:
// a Google identity token in GCP, the stack's static token locally),
// checks the role the route needs, and refuses a body over MaxBody with
// 413 — read here in full, so no handler ever sees a truncated body.
//
//	route                                   role
//	GET  /healthz                           (public)
//	GET  /executions, /executions/{id}[/events|/cost]
//	GET  /playbooks[/{path}], /cells, /results/{urn}
//	                                        viewer
//	POST /executions, /executions/{id}/cancel, /executions/{id}/rerun
//	                                        runner
//	/dlq..., POST /executions/{id}/rebuild  operator
//	/credentials..., POST /playbooks, POST /gc,
//	POST /executions/{id}/steps/{step}/complete|fail,
//	POST /results/verify, POST /results/repair,
//	anything else that is not a GET        admin
//
// No or bad credentials → 401 {"error"} with WWW-Authenticate: Bearer; a
// role too low → 403 {"error"}. Past the guard, the execution routes
// serve a caller below the operator role its own executions only (the
// ones it started: owned, listScope); another's is 404, as a missing one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/wiring"
)

// MaxBody is the largest request body the api accepts, in bytes (1 MiB: a
// playbook and its workload must fit one Firestore document, whose limit
// is 1 MiB); a larger body is refused with 413, never truncated.
const MaxBody = 1 << 20

var (
	authMu sync.Mutex
	// authenticator replaces the runtime's authenticator when set (tests).
	authenticator *auth.Authenticator
)

// Authenticator returns the instance's authenticator: the runtime's
// (wiring.Authenticator: NOETL_API_TOKEN, NOETL_API_AUDIENCES,
// NOETL_API_ROLES_FILE), or the one a test installed.
func Authenticator(ctx context.Context) (*auth.Authenticator, error) {
	authMu.Lock()
	a := authenticator
	authMu.Unlock()
	if a != nil {
		return a, nil
	}
	return wiring.Authenticator(ctx)
}

// RequiredRole returns the role a request needs (see the table above);
// public reports a route open to anyone (the health check).
func RequiredRole(method, path string) (role auth.Role, public bool) {
	p := strings.TrimSuffix(strings.TrimPrefix(path, "/api"), "/")
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case p == "" || p == "/healthz":
		return auth.None, true
	case p == "/credentials" || strings.HasPrefix(p, "/credentials/"):
		return auth.Admin, false
	case p == "/dlq" || strings.HasPrefix(p, "/dlq/"):
		return auth.Operator, false
	case strings.HasPrefix(p, "/executions/") && strings.HasSuffix(p, "/rebuild") && method == http.MethodPost:
		return auth.Operator, false
	case p == "/playbooks" || strings.HasPrefix(p, "/playbooks/"):
		if read {
			return auth.Viewer, false
		}
		return auth.Admin, false
	case p == "/executions" && method == http.MethodPost:
		return auth.Runner, false
	case strings.HasPrefix(p, "/executions/") && (strings.HasSuffix(p, "/cancel") || strings.HasSuffix(p, "/rerun")) && method == http.MethodPost:
		return auth.Runner, false
	case read:
		return auth.Viewer, false
	}
	return auth.Admin, false
}

// Guard authorizes r for role need and bounds its body (MaxBody, 413). It
// writes the refusal and returns false, or returns the request to serve
// (its body read in full, its context carrying the principal).
func Guard(w http.ResponseWriter, r *http.Request, a *auth.Authenticator, need auth.Role, public bool) (*http.Request, bool) {
	if !public {
		p, err := a.Authorize(r, need)
		if err != nil {
			if auth.Status(err) == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="noetl"`)
			}
			writeJSON(w, auth.Status(err), map[string]any{"error": err.Error()})
			return nil, false
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
	}
	body, err := auth.ReadBody(r, MaxBody)
	if err != nil {
		var tl *auth.TooLargeError
		if errors.As(err, &tl) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
			return nil, false
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "cannot read the request body: " + err.Error()})
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r, true
}

// authorize is the api's guard: it returns the request to serve, or false
// after writing the refusal (401, 403, 413, or 500 when the configuration
// cannot be read).
func authorize(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	need, public := RequiredRole(r.Method, r.URL.Path)
	if public {
		return Guard(w, r, nil, need, true)
	}
	a, ok := opened(r.Context(), w, Authenticator)
	if !ok {
		return nil, false
	}
	return Guard(w, r, a, need, false)
}

// documentFits checks that a playbook's source and its workload fit one
// execution document (control.StateMaxBytes, under Firestore's 1 MiB):
// an execution that could never be written is refused (413) at start.
func documentFits(src []byte, workload map[string]any, files int) error {
	wl, err := json.Marshal(workload)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if n := len(src) + len(wl) + files; n > control.StateMaxBytes {
		return fmt.Errorf("the playbook (%d bytes), its workload (%d bytes) and its script files (%d bytes) are over the %d-byte limit of an execution document (Firestore's 1 MiB): pass large inputs by reference (a results-tier object, a table, a URL)", len(src), len(wl), files, control.StateMaxBytes)
	}
	return nil
}
