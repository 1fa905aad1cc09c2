package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// request is one request the fake api received.
type request struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

// fakeAPI is an in-memory stand-in for the api function: routes are
// "METHOD /path" (path after /api, without the query) → handler. An
// unknown route answers 404 {"error": "no route for ..."} as the real
// api does.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	reqs   []request
}

func newFake(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, routes: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the api base URL (".../api").
func (f *fakeAPI) URL() string { return f.srv.URL + "/api" }

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rq := request{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api"), Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &rq.Body); err != nil {
			f.t.Errorf("fake api: %s %s: body %q is not a JSON object: %v", r.Method, r.URL.Path, b, err)
		}
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rq)
	h := f.routes[r.Method+" "+rq.Path]
	f.mu.Unlock()
	if h == nil {
		// As the api: any id under /executions/ is a route; an unknown
		// one is "not found".
		if id, ok := strings.CutPrefix(rq.Path, "/executions/"); ok {
			id, _, _ = strings.Cut(id, "/")
			writeFake(w, 404, map[string]any{"error": "execution " + id + " not found"})
			return
		}
		writeFake(w, 404, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
		return
	}
	h(w, r)
}

// on installs a handler.
func (f *fakeAPI) on(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// reply installs a handler answering code and the JSON of v.
func (f *fakeAPI) reply(route string, code int, v any) {
	f.on(route, func(w http.ResponseWriter, r *http.Request) { writeFake(w, code, v) })
}

// requests returns the requests received so far.
func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// count counts the requests on a route.
func (f *fakeAPI) count(route string) int {
	n := 0
	for _, r := range f.requests() {
		if r.Method+" "+r.Path == route {
			n++
		}
	}
	return n
}

func writeFake(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// result is one CLI invocation's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// testApp returns an app with the given environment (nothing else of the
// process's), stdout not a terminal, and fast polling.
func testApp(env map[string]string) (*app, *bytes.Buffer, *bytes.Buffer) {
	var so, se bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &so, stderr: &se,
		env:      func(k string) string { return env[k] },
		hc:       &http.Client{Timeout: 2 * time.Second},
		giveUp:   400 * time.Millisecond,
		interval: 10 * time.Millisecond,
		settle:   60 * time.Millisecond,
	}
	return a, &so, &se
}

// exec runs args on a.
func execApp(a *app, so, se *bytes.Buffer, args ...string) result {
	code := a.run(args)
	return result{code: code, stdout: so.String(), stderr: se.String()}
}

// cli runs the CLI against the fake api (NOETL_API_URL) with --output
// json unless args name an output.
func (f *fakeAPI) cli(args ...string) result {
	a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL()})
	return execApp(a, so, se, args...)
}

// dialTo returns a client whose every connection goes to addr, whatever
// the URL's host: a non-local api URL reaches the fake.
func dialTo(addr string) *http.Client {
	d := &net.Dialer{}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
}
