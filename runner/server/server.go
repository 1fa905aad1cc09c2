package server

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Verifier authenticates a call to the runner from its Authorization
// header; a non-nil error refuses it (401). shared/oidc's Verifier is
// the production one.
type Verifier interface {
	VerifyCaller(ctx context.Context, authorization string) error
}

// Handler is the runner's HTTP handler: POST RunPath runs one attempt,
// GET HealthPath answers "ok". Safe for concurrent use.
type Handler struct {
	// Tools runs the kinds this runner serves (tools.Runner's registry,
	// built with Credentials: GrantedStore{}).
	Tools tools.Registry
	// Auth verifies callers; nil admits every caller (tests only: a
	// runner refuses to start without one, cmd/runner).
	Auth Verifier
	// Log receives one line per refused call and per attempt.
	Log *slog.Logger
	// Setup, when set, prepares each attempt's context (the runner: a
	// private workspace, runner/sandbox) and returns the function that
	// releases it after the attempt; an error fails the attempt with
	// kind "internal" (retryable).
	Setup func(ctx context.Context, req runnerproto.Request) (context.Context, func(), error)
	// ResultsHTTP sends the reads and writes of the request's result
	// grants (WithResultGrants): the egress policy's client, which must admit
	// the object store's host. Nil: http.DefaultClient.
	ResultsHTTP *http.Client

	// releasing counts the attempts whose Setup is being released after
	// their answer (Wait).
	releasing sync.WaitGroup
}

// Wait returns when every attempt's Setup has been released (the
// runner's shutdown, after the server's).
func (h *Handler) Wait() { h.releasing.Wait() }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == runnerproto.HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	case r.URL.Path == runnerproto.RunPath && r.Method == http.MethodPost:
		h.run(w, r)
	case r.URL.Path == runnerproto.RunPath:
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, "use POST")
	default:
		answer(w, http.StatusNotFound, "no such endpoint")
	}
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func answer(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(runnerproto.ErrorBody{Error: msg})
}

func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	ctx := r.Context()
	if h.Auth != nil {
		if err := h.Auth.VerifyCaller(ctx, r.Header.Get("Authorization")); err != nil {
			h.log().WarnContext(ctx, "runner: call refused", "error", err.Error(), "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			answer(w, http.StatusUnauthorized, err.Error())
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, runnerproto.MaxRequestBytes+1))
	if err != nil {
		answer(w, http.StatusBadRequest, "read request: "+err.Error())
		return
	}
	if len(body) > runnerproto.MaxRequestBytes {
		answer(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", runnerproto.MaxRequestBytes))
		return
	}
	req, err := runnerproto.DecodeRequest(body)
	if err != nil {
		answer(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Version != runnerproto.Version {
		answer(w, http.StatusBadRequest, fmt.Sprintf("protocol version %d, this runner speaks %d", req.Version, runnerproto.Version))
		return
	}
	tool := h.Tools[req.Kind]
	if tool == nil {
		answer(w, http.StatusBadRequest, fmt.Sprintf("task kind %q does not run in the runner (it runs %v)", req.Kind, kindsOf(h.Tools)))
		return
	}
	ctx = WithGrants(ctx, req.Credentials)
	ctx, quota := withQuota(ctx)
	ctx = WithResultGrants(ctx, req, h.ResultsHTTP)
	var out types.Outcome
	release := func() {}
	if h.Setup != nil {
		var err error
		ctx, release, err = h.Setup(ctx, req)
		if err != nil {
			out = types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindInternal, Retryable: true,
				Message: fmt.Sprintf("%s task: the runner cannot prepare the attempt: %v", req.Kind, err)}}
			release = func() {}
		}
	}
	if out.Error == nil {
		out = tool.Run(ctx, tools.Request{ExecutionID: req.ExecutionID, Step: req.Step, Task: req.Task, Attempt: req.Attempt,
			Args: req.Args, Config: req.Config, Context: req.Context, TimeoutS: req.TimeoutS,
			Barrier: req.Barrier, BarrierMAC: req.BarrierKey, Inputs: req.Inputs})
	}
	// What Setup made (the attempt's workspace: a tmpfs to unmount and
	// remove) is released after the answer, not before it: the tool has
	// returned, nothing of the attempt uses it any more.
	h.releasing.Add(1)
	defer func() {
		go func() {
			defer h.releasing.Done()
			release()
		}()
	}()
	if err := quota.hit(); err != nil && out.Status != types.StatusOK {
		// The attempt wrote more than its quota of the result tier: it
		// fails with kind limit, naming the quota, whatever its kind
		// made of the refusal.
		out.Error = &types.TaskError{Kind: types.ErrKindLimit, Message: fmt.Sprintf("%s task: limit result tier reached: %v", req.Kind, err)}
	}
	// What a task's code controls crosses the boundary bounded: the error
	// message up to what the control plane stores of it, the rest to its
	// fixed sizes (types.Outcome.Bound); the control plane cuts the
	// message further (NOETL_TASK_ERROR_MAX_BYTES).
	out.Bound(types.StoredErrorMax, "the runner's limit")
	resp := runnerproto.Response{Outcome: out, Extra: out.Extra}
	resp.RunMS = float64(time.Since(t0).Microseconds()) / 1000
	b, err := runnerproto.Encode(resp)
	if err != nil {
		resp = runnerproto.Response{Outcome: types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindConfig,
			Message: fmt.Sprintf("%s task: the result cannot be encoded as JSON: %v", req.Kind, err)}}}
		b, _ = runnerproto.Encode(resp)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
	lvl := slog.LevelDebug
	if out.Status != types.StatusOK {
		lvl = slog.LevelInfo
	}
	attrs := []any{"execution_id", req.ExecutionID, "step", req.Step, "task", req.Task, "attempt", req.Attempt, "tool_kind", req.Kind,
		"ok", out.Status == types.StatusOK, "duration_ms", resp.RunMS}
	if out.Error != nil {
		attrs = append(attrs, "error_class", out.Error.Kind)
	}
	h.log().Log(ctx, lvl, "runner: attempt", attrs...)
}

func kindsOf(r tools.Registry) []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type grantsKey struct{}

// WithGrants returns ctx carrying the credentials granted to the request
// being served (GrantedStore reads them).
func WithGrants(ctx context.Context, granted map[string]credentials.Credential) context.Context {
	return context.WithValue(ctx, grantsKey{}, granted)
}

// ErrReadOnly is returned by GrantedStore's writes (code PermissionDenied).
var ErrReadOnly = errs.Sentinel(errs.PermissionDenied, "runner: the granted credentials are read-only")

// GrantedStore is the credential store of the runner's tools: it holds
// exactly the credentials of the request being served (WithGrants), so a
// task resolves `auth:` names among what it was granted and nothing else.
// Writes fail with ErrReadOnly.
type GrantedStore struct{}

// CredentialGet implements credentials.Store.
func (GrantedStore) CredentialGet(ctx context.Context, name string) (*credentials.Credential, error) {
	g, _ := ctx.Value(grantsKey{}).(map[string]credentials.Credential)
	c, ok := g[name]
	if !ok {
		return nil, fmt.Errorf("%w: credential %q was not granted to this task", credentials.ErrNotFound, name)
	}
	cp := c
	cp.Data = cloneMap(c.Data)
	return &cp, nil
}

// CredentialInfo implements credentials.Store: the summary of a granted
// credential; credentials.ErrNotFound for any other name.
func (GrantedStore) CredentialInfo(ctx context.Context, name string) (*credentials.Summary, error) {
	g, _ := ctx.Value(grantsKey{}).(map[string]credentials.Credential)
	c, ok := g[name]
	if !ok {
		return nil, fmt.Errorf("%w: credential %q was not granted to this task", credentials.ErrNotFound, name)
	}
	s := c.Summary()
	return &s, nil
}

// CredentialList implements credentials.Store: summaries of the granted
// credentials.
func (GrantedStore) CredentialList(ctx context.Context) ([]credentials.Summary, error) {
	g, _ := ctx.Value(grantsKey{}).(map[string]credentials.Credential)
	out := make([]credentials.Summary, 0, len(g))
	for _, c := range g {
		out = append(out, c.Summary())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CredentialPut implements credentials.Store (ErrReadOnly).
func (GrantedStore) CredentialPut(context.Context, credentials.Credential) error { return ErrReadOnly }

// CredentialDelete implements credentials.Store (ErrReadOnly).
func (GrantedStore) CredentialDelete(context.Context, string) error { return ErrReadOnly }

func cloneMap(m map[string]any) map[string]any {
	if c, ok := jsonx.Clone(m).(map[string]any); ok {
		return c
	}
	return m
}
