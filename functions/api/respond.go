package api

// The answers the handlers share: 500 when the runtime (or a client
// opened on it) is not there, 404 or the status of the error's code after
// a store read, 400 for a body that is not JSON or a document that does
// not validate, and the routes of a REST collection.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/wiring"
)

// opened returns what open (deps, Registrar, CredentialStore,
// Authenticator) gives for ctx, or writes 500 {"error"} and false.
func opened[T any](ctx context.Context, w http.ResponseWriter, open func(context.Context) (T, error)) (T, bool) {
	v, err := open(ctx)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return v, false
	}
	return v, true
}

// unavailable writes {"error"} for a store or service failure with the
// status of its code (errs.HTTPStatus, the one policy table): 503 for an
// unavailable or unclassified backend and a retry-later conflict, 500
// Internal, 504 DeadlineExceeded, 429 ResourceExhausted, 403
// PermissionDenied, 404 NotFound, 409 AlreadyExists, 400 InvalidArgument,
// 501 Unimplemented.
func unavailable(w http.ResponseWriter, err error) {
	writeJSON(w, errs.HTTPStatus(err), map[string]any{"error": err.Error()})
}

// found reports whether err is nil; else it writes 404 {"error":
// notFound} when err is notFoundErr (errors.Is), or hands err to other
// (unavailable, or a route's own mapping) and returns false.
func found(w http.ResponseWriter, err, notFoundErr error, notFound string, other func(http.ResponseWriter, error)) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, notFoundErr):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": notFound})
	default:
		other(w, err)
	}
	return false
}

// execution reads execution id from the store, or writes 404 {"error":
// "execution ID not found"} or 503 and returns false.
func execution(ctx context.Context, w http.ResponseWriter, d *wiring.Deps, id string) (*store.Execution, bool) {
	rec, err := d.Store.ExecutionGet(ctx, id)
	return rec, found(w, err, store.ErrNotFound, "execution "+id+" not found", unavailable)
}

// executionOf opens the runtime and reads execution id (execution) for
// the request's caller (owned), or writes 500, 404 or 503 and returns
// false.
func executionOf(w http.ResponseWriter, r *http.Request, id string) (*wiring.Deps, *store.Execution, bool) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return nil, nil, false
	}
	rec, ok := execution(r.Context(), w, d, id)
	if ok && !owned(w, r, rec) {
		return nil, nil, false
	}
	return d, rec, ok
}

// owned reports whether the request's caller may read, cancel or emit
// into rec (auth.MayAccess: an operator or admin, or the principal that
// started it); else it writes 404 {"error": "execution ID not found"},
// the answer for an execution that does not exist, so that a caller
// cannot tell another's executions from missing ones.
func owned(w http.ResponseWriter, r *http.Request, rec *store.Execution) bool {
	if p, ok := auth.PrincipalOf(r.Context()); ok && auth.MayAccess(p, rec.State.Creator) {
		return true
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + rec.State.ExecutionID + " not found"})
	return false
}

// openOnce returns *cached, or on first use opens it on the runtime
// (deps) under mu and keeps it; a failed open is returned to this
// call and tried again on the next.
func openOnce[T comparable](ctx context.Context, mu *sync.Mutex, cached *T, open func(*wiring.Deps) (T, error)) (T, error) {
	mu.Lock()
	defer mu.Unlock()
	var zero T
	if *cached != zero {
		return *cached, nil
	}
	d, err := deps(ctx)
	if err != nil {
		return zero, err
	}
	v, err := open(d)
	if err != nil {
		return zero, err
	}
	*cached = v
	return v, nil
}

// decodeJSON decodes a request body into v (jsonx), or writes 400
// {"error": "invalid JSON body: ..."} and returns false.
func decodeJSON(w http.ResponseWriter, body []byte, v any) bool {
	if err := jsonx.Unmarshal(body, v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid JSON body: " + err.Error()})
		return false
	}
	return true
}

// invalidDocument writes 400 {"error": title, "problems", "message"} and
// returns true when err is a *dsl.ValidationError (a playbook or resource
// that does not validate; problems carry their YAML lines).
func invalidDocument(w http.ResponseWriter, err error, title string) bool {
	var ve *dsl.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": title, "problems": ve.Problems, "message": err.Error()})
	return true
}

// collection is the routes of a REST collection (/credentials,
// /subscriptions): create (POST) and list (GET) on the collection, get
// (GET) and del (DELETE) on one named member.
type collection struct {
	create, list func(http.ResponseWriter, *http.Request)
	get, del     func(http.ResponseWriter, *http.Request, string)
}

// serve routes r; rest is the path after the collection's name: "" or
// "/" for the collection, "/{name}" for a member (a trailing slash is
// ignored). Other methods are 405 with an Allow header; a deeper path is
// 404.
func (c collection) serve(w http.ResponseWriter, r *http.Request, rest string) {
	name := strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/")
	if name == "" {
		switch r.Method {
		case http.MethodPost:
			c.create(w, r)
		case http.MethodGet:
			c.list(w, r)
		default:
			methodNotAllowed(w, r, "GET, POST")
		}
		return
	}
	if strings.Contains(name, "/") {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
		return
	}
	switch r.Method {
	case http.MethodGet:
		c.get(w, r, name)
	case http.MethodDelete:
		c.del(w, r, name)
	default:
		methodNotAllowed(w, r, "GET, DELETE")
	}
}

// methodNotAllowed writes 405 {"error"} with an Allow header.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "method " + r.Method + " not allowed on " + r.URL.Path + " (allowed: " + allow + ")"})
}
