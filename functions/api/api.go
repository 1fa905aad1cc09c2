// Package api is the api Cloud Function (HTTP trigger): it starts
// executions and serves their status and events, and the operator console.
//
//	POST /executions             {"path": "examples/x.yaml" | "playbook": "<yaml>", "workload": {...}}
//	                             → 202 {"execution_id", "status"}; 400 {"error", "problems": [{line, path, message}]};
//	                             403 {"error"} naming a credential the playbook is not granted
//	GET  /executions/{id}        → 200 status view (inspect.Status); 404
//	GET  /executions/{id}/events → 200 {"events": [...]} in causal order
//	POST /executions/{id}/rerun  {"from": "failed" | "<step>", "workload": {...}}
//	                             → 202 {"execution_id", "rerun_of", "reused", ...} (rerun.go)
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
	"path"
	"strings"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.HTTP("api", API) }

// Needs is what the api builds besides the base every function has
// (wiring.Needs; wiring.Get): the catalog and the credential store
// (starts, /credentials, redaction), the control plane (cancel, DLQ
// discards), the dispatcher and the worker without tools (DLQ replays of
// units). No tool registry, no runner client.
const Needs = wiring.NeedCatalog | wiring.NeedCredentials | wiring.NeedControl | wiring.NeedDispatcher | wiring.NeedWorker | wiring.NeedResults

// deps returns the api's dependencies (wiring.Get with Needs).
func deps(ctx context.Context) (*wiring.Deps, error) { return wiring.Get(ctx, Needs) }

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

// route serves an authorized request (its principal in its context):
// apiRoutes matches its path (apiPath: without the optional "/api" prefix
// and a trailing slash) and the handler serves the request as it came, so
// errors quote the path the caller sent. An unmatched path or method is a
// 404 {"error": "no route for METHOD PATH"}.
func route(w http.ResponseWriter, r *http.Request) {
	p := apiPath(r)
	if path.Clean(p) != p {
		// The mux would redirect a path it cleans (a "//", a "..") to
		// one without the "/api" prefix: such a path has no route.
		noRoute(w, r)
		return
	}
	m := r.Clone(r.Context())
	m.URL.Path, m.URL.RawPath = p, ""
	h, _ := apiRoutes.Handler(m)
	h.ServeHTTP(w, r)
}

// apiPath is the request's path as the api's routes match it: without the
// optional "/api" prefix and a trailing slash ("/" for none).
func apiPath(r *http.Request) string {
	p := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api"), "/")
	if p == "" {
		return "/"
	}
	return p
}

// executionPath is the part of the api path between "/executions/" and
// suffix.
func executionPath(r *http.Request, suffix string) string {
	return strings.TrimSuffix(strings.TrimPrefix(apiPath(r), "/executions/"), suffix)
}

// apiRoutes are the api's routes (net/http ServeMux patterns, matched by
// route against apiPath).
var apiRoutes = func() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", health)
	mux.HandleFunc("/healthz", health)
	mux.HandleFunc("POST /executions", start)
	mux.HandleFunc("GET /executions", list)
	sub := func(prefix string, h func(http.ResponseWriter, *http.Request, string)) {
		f := func(w http.ResponseWriter, r *http.Request) { h(w, r, strings.TrimPrefix(apiPath(r), prefix)) }
		mux.HandleFunc(prefix, f)
		mux.HandleFunc(prefix+"/", f)
	}
	sub("/credentials", Credentials)
	sub("/subscriptions", subscriptions)
	sub("/dlq", dlqRoute)
	sub("/playbooks", playbooks)
	mux.HandleFunc("POST /executions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) { cancel(w, r, executionPath(r, "/cancel")) })
	mux.HandleFunc("POST /executions/{id}/rerun", func(w http.ResponseWriter, r *http.Request) { rerunExecution(w, r, executionPath(r, "/rerun")) })
	mux.HandleFunc("POST /executions/{id}/rebuild", func(w http.ResponseWriter, r *http.Request) { rebuild(w, r, executionPath(r, "/rebuild")) })
	mux.HandleFunc("POST /executions/{id}/steps/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		id, step, action, ok := stepRoute(executionPath(r, ""))
		if !ok {
			noRoute(w, r)
			return
		}
		endStep(w, r, id, step, action)
	})
	mux.HandleFunc("POST /gc", collect)
	mux.HandleFunc("GET /cells", cells)
	mux.HandleFunc("POST /results/verify", verifyResults)
	mux.HandleFunc("POST /results/repair", repairResult)
	mux.HandleFunc("GET /results", resultByURN)
	mux.HandleFunc("GET /results/", resultByURN)
	mux.HandleFunc("GET /executions/{id}/events", func(w http.ResponseWriter, r *http.Request) { events(w, r, executionPath(r, "/events")) })
	mux.HandleFunc("GET /executions/{id}/cost", func(w http.ResponseWriter, r *http.Request) { cost(w, r, executionPath(r, "/cost")) })
	mux.HandleFunc("GET /executions/{rest...}", func(w http.ResponseWriter, r *http.Request) { get(w, r, executionPath(r, "")) })
	mux.HandleFunc("/", noRoute)
	return mux
}()

// health serves /healthz (and the api's root): healthy only when callers
// can be identified (in the cloud profile without roles the api serves no
// one: wiring.Roles). 200 {"ok": true}; 503 {"ok": false, "error"}.
func health(w http.ResponseWriter, r *http.Request) {
	if _, err := Authenticator(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// noRoute answers 404 {"error": "no route for METHOD PATH"}.
func noRoute(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
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
	// Files are, with an inline playbook, the script files beside it that
	// its tasks read ({path as the playbook writes it: {sha256, content}},
	// launch.CheckFiles): the CLI sends them (README "Running any
	// playbook": scripts beside the playbook).
	Files map[string]store.ExecutionFile `json:"files,omitempty"`
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
	d, ok := opened(ctx, w, deps)
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
		src         []byte
		name        string
		pb          *dsl.Playbook
		catalogPath string // "" for an inline playbook: it matches inline grants only
	)
	if req.Playbook != "" {
		src, name = []byte(req.Playbook), "playbook"
		if pb, err = dsl.Load(src, name); err == nil {
			err = launch.CheckFiles(pb, req.Files)
		}
	} else if len(req.Files) > 0 {
		err = errors.New("files are sent with an inline playbook only (a catalog or file playbook reads its scripts under the playbook root)")
	} else if req.Path == "" {
		err = errors.New("either path or playbook is required")
	} else {
		var e *catalog.Entry
		name = req.Path
		if e, err = d.Catalog.Load(ctx, req.Path, req.Version); err == nil {
			pb, src, catalogPath = e.Playbook, e.Source, e.Path
		}
	}
	if err != nil {
		if !invalidDocument(w, err, "invalid playbook "+name) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		}
		return
	}
	if err := documentFits(src, req.Workload, launch.FilesBytes(req.Files)); err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
		return
	}
	if req.ParentID != "" {
		// A parent shares its results with its children (shared/results
		// ownership): only a caller who may read the parent may name it.
		parent, ok := execution(ctx, w, d, req.ParentID)
		if !ok || !owned(w, r, parent) {
			return
		}
	}
	id, err := launch.Start(ctx, d.Store, d.Bus, launch.Params{Playbook: pb, Source: src, Files: req.Files, Workload: req.Workload, ParentID: req.ParentID,
		Credentials: d.Credentials, Creator: principal(r), CatalogPath: catalogPath})
	var ke *launch.KeychainError
	if errors.Is(err, credentials.ErrNotGranted) {
		// Credentials by grant (README "Security"): refused before it runs,
		// naming the credential, the playbook and the grants.
		writeJSON(w, http.StatusForbidden, map[string]any{"error": err.Error()})
		return
	}
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
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	// The execution first: its creator decides who may read its log (a
	// log without its execution document is an operator's to read).
	var red *redact.Redactor
	rec, err := d.Store.ExecutionGet(ctx, id)
	switch {
	case err == nil:
		if !owned(w, r, rec) {
			return
		}
		red = redactorOf(ctx, d, rec)
	case errors.Is(err, store.ErrNotFound) && operator(r):
		red = redact.New(nil)
	default:
		found(w, err, store.ErrNotFound, "execution "+id+" not found", unavailable)
		return
	}
	evs, err := d.Store.EventList(ctx, id)
	if err != nil {
		unavailable(w, err)
		return
	}
	evs = redactEvents(red, evs)
	writeJSON(w, http.StatusOK, map[string]any{"execution_id": id, "count": len(evs), "events": evs})
}

// redactEvents masks the payloads of evs with red (in place; nil evs
// become an empty list).
func redactEvents(red *redact.Redactor, evs []types.Event) []types.Event {
	if evs == nil {
		evs = []types.Event{}
	}
	for i := range evs {
		if m, ok := red.Value(evs[i].Payload).(map[string]any); ok {
			evs[i].Payload = m
		}
	}
	return evs
}

// operator reports whether the request's caller has the operator role
// (or admin): it reads and cancels every execution and runs the DLQ.
func operator(r *http.Request) bool {
	p, ok := auth.PrincipalOf(r.Context())
	return ok && p.Role >= auth.Operator
}

// principal is the request's caller's name ("" when the guard set none).
func principal(r *http.Request) string {
	p, _ := auth.PrincipalOf(r.Context())
	return p.Name
}

// redactorOf returns the redactor for an execution's API views: its
// keychain's values, its secret-named workload values and secret-named
// keys are masked (NoETL observability spec §8.9; wiring.Deps.RedactorOf).
func redactorOf(ctx context.Context, d *wiring.Deps, rec *store.Execution) *redact.Redactor {
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
