// Package api is the api Cloud Function (HTTP trigger): it starts
// executions and serves their status and events, and the operator console.
//
//	POST /executions             {"path": "examples/x.yaml" | "playbook": "<yaml>", "workload": {...}}
//	                             → 202 {"execution_id", "status"}; 400 {"error", "problems": [{line, path, message}]}
//	GET  /executions/{id}        → 200 status view (inspect.Status); 404
//	GET  /executions/{id}/events → 200 {"events": [...]} in causal order
//	GET  /console/...            → the operator console (console.go, package console)
//	GET  /healthz                → 200
//
// (README "HTTP API" lists every route.)
package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

func init() { functions.HTTP("api", API) }

// API routes the HTTP API. Paths are matched after an optional "/api"
// prefix so the same handler serves at "/" (Cloud Functions) and "/api/"
// (the local server). Every request passes the guard first (auth.go:
// caller identity, role, body limit).
func API(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		// Reads by operators (status, events, cost, console pages) are not
		// part of what an execution costs to run: they are metered apart
		// (and dropped).
		r = r.WithContext(meter.With(r.Context(), meter.New()))
	}
	if isConsole(r.URL.Path) {
		// The console authenticates its visitors with the api's
		// authenticator (a bearer token, or its session cookie) and
		// reaches the api's routes in process as them (console.go).
		consoleHandler.ServeHTTP(w, r)
		return
	}
	r, ok := authorize(w, r)
	if !ok {
		return
	}
	route(w, r)
}

// route serves an authorized request (its principal in its context).
func route(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api")
	p = strings.TrimSuffix(p, "/")
	switch {
	case p == "/healthz" || p == "":
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case p == "/executions" && r.Method == http.MethodPost:
		start(w, r)
	case p == "/executions" && r.Method == http.MethodGet:
		list(w, r)
	case p == "/credentials" || strings.HasPrefix(p, "/credentials/"):
		Credentials(w, r, strings.TrimPrefix(p, "/credentials"))
	case p == "/subscriptions" || strings.HasPrefix(p, "/subscriptions/"):
		subscriptions(w, r, strings.TrimPrefix(p, "/subscriptions"))
	case p == "/dlq" || strings.HasPrefix(p, "/dlq/"):
		dlqRoute(w, r, strings.TrimPrefix(p, "/dlq"))
	case strings.HasPrefix(p, "/executions/") && strings.HasSuffix(p, "/cancel") && r.Method == http.MethodPost:
		cancel(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/executions/"), "/cancel"))
	case p == "/playbooks" || strings.HasPrefix(p, "/playbooks/"):
		playbooks(w, r, strings.TrimPrefix(p, "/playbooks"))
	case strings.HasPrefix(p, "/executions/") && r.Method == http.MethodGet:
		rest := strings.TrimPrefix(p, "/executions/")
		if id, ok := strings.CutSuffix(rest, "/events"); ok {
			events(w, r, id)
			return
		}
		if id, ok := strings.CutSuffix(rest, "/cost"); ok {
			cost(w, r, id)
			return
		}
		get(w, r, rest)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// StartRequest is the body of POST /executions.
type StartRequest struct {
	// Path is a catalog path (POST /playbooks) or a playbook file,
	// relative to NOETL_REPO_ROOT or absolute.
	Path string `json:"path"`
	// Version is the catalog version (0 or absent = latest).
	Version int `json:"version"`
	// Playbook is inline playbook YAML (instead of Path).
	Playbook string `json:"playbook"`
	// Workload is deep-merged over the playbook's workload.
	Workload map[string]any `json:"workload"`
	// ParentID links a child execution to its parent.
	ParentID string `json:"parent_id"`
}

func start(w http.ResponseWriter, r *http.Request) {
	// One trace follows the execution: it starts here (or continues the
	// caller's) and rides in Pub/Sub attributes and Cloud Task headers.
	// (launch.Start makes the execution's root the parent: a sampled
	// caller's traceparent makes the execution sampled.)
	ctx := telemetry.Extract(r.Context(), map[string]string{"traceparent": r.Header.Get("traceparent"), "tracestate": r.Header.Get("tracestate")})
	d, ok := opened(ctx, w, runtime.Get)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	var req StartRequest
	if !decodeJSON(w, body, &req) {
		return
	}
	req.Workload = jsonx.NormalizeMap(req.Workload)
	var (
		src  []byte
		name string
		pb   *dsl.Playbook
	)
	if req.Playbook != "" {
		src, name = []byte(req.Playbook), "playbook"
		pb, err = dsl.Load(src, name)
	} else if req.Path == "" {
		err = errors.New("either path or playbook is required")
	} else {
		var e *catalog.Entry
		name = req.Path
		if e, err = d.Catalog.Load(ctx, req.Path, req.Version); err == nil {
			pb, src = e.Playbook, e.Source
		}
	}
	if err != nil {
		if !invalidDocument(w, err, "invalid playbook "+name) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		}
		return
	}
	if err := documentFits(src, req.Workload); err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
		return
	}
	id, err := launch.Start(ctx, d.Store, d.Bus, launch.Params{Playbook: pb, Source: src, Workload: req.Workload, ParentID: req.ParentID, Credentials: d.Credentials})
	var ke *launch.KeychainError
	if errors.As(err, &ke) {
		code := http.StatusServiceUnavailable
		if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, map[string]any{"error": err.Error()})
		return
	}
	if err != nil {
		unavailable(w, err)
		return
	}
	warnings := []string{}
	for _, p := range pb.Warnings {
		warnings = append(warnings, p.Message)
	}
	d.Log.InfoContext(ctx, "execution requested", "execution_id", id, "playbook", pb.Metadata.Name)
	writeJSON(w, http.StatusAccepted, map[string]any{"execution_id": id, "status": engine.ExecRequested, "warnings": warnings})
}

// get serves GET /executions/{id}: the status document (inspect.Status;
// a running loop's progress is its ended iterations, counted).
func get(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, rec, ok := executionOf(w, r, id)
	if !ok {
		return
	}
	count := func(key string) (int, error) { return d.Store.IterationCount(ctx, id, key) }
	writeJSON(w, http.StatusOK, inspect.StatusOf(rec.State, redactorOf(ctx, d, rec), count, time.Now()))
}

func events(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, ok := opened(ctx, w, runtime.Get)
	if !ok {
		return
	}
	evs, err := redactedEvents(ctx, d, id)
	if err != nil {
		unavailable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"execution_id": id, "count": len(evs), "events": evs})
}

// redactedEvents reads an execution's events in causal order
// (store.Store.EventList; an empty list for an unknown id), their payloads
// masked with the execution's redactor (the key rules alone when its
// document cannot be read).
func redactedEvents(ctx context.Context, d *runtime.Deps, id string) ([]types.Event, error) {
	evs, err := d.Store.EventList(ctx, id)
	if err != nil {
		return nil, err
	}
	return redactEvents(ctx, d, id, evs), nil
}

// redactEvents masks the payloads of execution id's events (in place).
func redactEvents(ctx context.Context, d *runtime.Deps, id string, evs []types.Event) []types.Event {
	if evs == nil {
		evs = []types.Event{}
	}
	var red *redact.Redactor
	if rec, err := d.Store.ExecutionGet(ctx, id); err == nil {
		red = redactorOf(ctx, d, rec)
	} else {
		red = redact.New(nil)
	}
	for i := range evs {
		if m, ok := red.Value(evs[i].Payload).(map[string]any); ok {
			evs[i].Payload = m
		}
	}
	return evs
}

// redactorOf returns the redactor for an execution's API views: its
// keychain's values, its secret-named workload values and secret-named
// keys are masked (seed 000 §8.9; runtime.Deps.RedactorOf).
func redactorOf(ctx context.Context, d *runtime.Deps, rec *store.Execution) *redact.Redactor {
	return d.RedactorOf(ctx, rec.State.ExecutionID)
}

// cost serves GET /executions/{id}/cost (inspect.Cost).
func cost(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, rec, ok := executionOf(w, r, id)
	if !ok {
		return
	}
	ops, err := d.Store.OpsTotal(ctx, id)
	if err != nil {
		unavailable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, inspect.CostOf(rec.State, ops))
}
