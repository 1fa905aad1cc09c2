package api

// The operator console (functions/api/console) is served by this function
// at /console/. It authenticates its visitors with the api's authenticator
// and reaches the api's routes in process as them (consoleBackend): the
// role table, the handlers' validation, access and redaction are the api's
// own, so the console follows them when they change.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/noetl/gcpengine/functions/api/console"
	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

// consoleHandler is the console, wired to this api.
var consoleHandler = console.New(console.Config{
	Backend:       consoleBackend{},
	Authenticator: Authenticator,
	Signer: func(ctx context.Context) (*sign.Signer, error) {
		d, err := deps(ctx)
		if err != nil {
			return nil, err
		}
		return d.Signer, nil
	},
	RequiredRole: RequiredRole,
})

// isConsole reports whether a request path is the console's.
func isConsole(path string) bool { return console.IsPath(path) }

// consoleBackend implements console.Backend on this api.
type consoleBackend struct{}

// recorder is the http.ResponseWriter of an in-process call.
type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

// Header implements http.ResponseWriter.
func (r *recorder) Header() http.Header { return r.h }

// Write implements http.ResponseWriter (200 unless a status was written).
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

// WriteHeader implements http.ResponseWriter (the first status wins).
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func newRecorder() *recorder { return &recorder{h: http.Header{}} }

// request is an in-process request for path (with its query) carrying
// ctx (and so the principal).
func request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("%q is not an api path", path)
	}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), io.NopCloser(bytes.NewReader(body)))
	if err != nil {
		return nil, err
	}
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Type", "application/json")
	return r, nil
}

// allowed checks the principal in ctx against the role the api route
// method path needs (RequiredRole), as Guard does; it writes the refusal
// into w.
func allowed(ctx context.Context, w http.ResponseWriter, method, path string) bool {
	need, public := RequiredRole(method, path)
	if public {
		return true
	}
	p, ok := auth.PrincipalOf(ctx)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "auth: unauthenticated"})
		return false
	}
	if p.Role < need {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": fmt.Sprintf("%v: %s has role %s; %s %s needs %s", auth.ErrForbidden, p.Name, p.Role, method, path, need)})
		return false
	}
	return true
}

// Call implements console.Backend: the route's role check, the body
// limit, then the route.
func (consoleBackend) Call(ctx context.Context, method, path string, body []byte) (int, []byte) {
	w := newRecorder()
	r, err := request(ctx, method, path, body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return w.code, w.body.Bytes()
	}
	if !allowed(ctx, w, method, r.URL.Path) {
		return w.code, w.body.Bytes()
	}
	if len(body) > MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", len(body), MaxBody)})
		return w.code, w.body.Bytes()
	}
	route(w, r)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.code, w.body.Bytes()
}

// readable opens the runtime and reads execution id as GET
// /executions/{id} does (executionOf), as the principal in ctx.
func readable(ctx context.Context, id string) (*wiring.Deps, *store.Execution, error) {
	w := newRecorder()
	path := "/executions/" + url.PathEscape(id)
	r, err := request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, nil, &console.Error{Code: http.StatusBadRequest, Message: err.Error()}
	}
	if !allowed(ctx, w, http.MethodGet, r.URL.Path) {
		return nil, nil, refusal(w)
	}
	d, rec, ok := executionOf(w, r, id)
	if !ok {
		return nil, nil, refusal(w)
	}
	return d, rec, nil
}

// refusal turns a recorded error answer into a *console.Error.
func refusal(w *recorder) error {
	var body struct {
		Error string `json:"error"`
	}
	_ = decodeJSONBytes(w.body.Bytes(), &body)
	if body.Error == "" {
		body.Error = http.StatusText(w.code)
	}
	return &console.Error{Code: w.code, Message: body.Error}
}

// Source implements console.Backend.
func (consoleBackend) Source(ctx context.Context, id string) (string, error) {
	_, rec, err := readable(ctx, id)
	if err != nil {
		return "", err
	}
	return rec.Source, nil
}

// Events implements console.Backend: the events redacted as GET
// /executions/{id}/events redacts them, and the operations GET
// /executions/{id}/cost prices, from one read of the batches
// (store.Store.EventLog).
func (consoleBackend) Events(ctx context.Context, id string) ([]types.Event, map[string]float64, error) {
	d, rec, err := readable(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	evs, ops, err := d.Store.EventLog(ctx, id)
	if err != nil {
		return nil, nil, &console.Error{Code: http.StatusServiceUnavailable, Message: err.Error()}
	}
	return redactEvents(redactorOf(ctx, d, rec), evs), ops, nil
}

// Result implements console.Backend: the reference loaded as execution
// id reads its results (shared/results ownership), redacted with its
// redactor.
func (consoleBackend) Result(ctx context.Context, id string, ref any) (any, error) {
	d, rec, err := readable(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Results == nil {
		return nil, &console.Error{Code: http.StatusServiceUnavailable, Message: "no results tier"}
	}
	rctx := results.WithReader(ctx, results.Reader{Execution: rec.State.ExecutionID, Parent: rec.State.ParentID})
	v, err := d.Results.Resolve(rctx, ref)
	if err != nil {
		return nil, &console.Error{Code: errs.HTTPStatus(err), Message: err.Error()}
	}
	return redactorOf(ctx, d, rec).Value(v), nil
}

// decodeJSONBytes decodes a JSON answer (jsonx).
func decodeJSONBytes(b []byte, v any) error { return jsonx.Unmarshal(b, v) }
