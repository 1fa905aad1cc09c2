package http

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/noetl/gcpengine/shared/types"
)

// request mirrors the fields of tools.Request that the kind uses (the kind
// packages cannot import package tools, which imports them).
type request struct {
	Args     map[string]any
	Config   map[string]any
	TimeoutS float64
}

func (t *Tool) run(ctx context.Context, r request) types.Outcome {
	return t.Exec(ctx, r.Args, r.Config, r.TimeoutS)
}

type M = map[string]any
type L = []any

// echo answers with a JSON description of the request it got.
func echo(w nethttp.ResponseWriter, r *nethttp.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	_ = json.NewEncoder(w).Encode(M{
		"method":       r.Method,
		"path":         r.URL.Path,
		"query":        r.URL.Query(),
		"body":         string(body),
		"content_type": r.Header.Get("Content-Type"),
		"traceparent":  r.Header.Get("Traceparent"),
		"x_custom":     r.Header.Get("X-Custom"),
		"user_agent":   r.Header.Get("User-Agent"),
		"n":            42,
		"f":            2.5,
	})
}

func server(t *testing.T) *httptest.Server {
	mux := nethttp.NewServeMux()
	mux.HandleFunc("/echo", echo)
	mux.HandleFunc("/text", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "hello, world")
	})
	mux.HandleFunc("/number-text", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "123")
	})
	mux.HandleFunc("/binary", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0xff, 0xfe, 0x00, 0x01})
	})
	mux.HandleFunc("/empty", func(w nethttp.ResponseWriter, r *nethttp.Request) { w.WriteHeader(nethttp.StatusNoContent) })
	mux.HandleFunc("/status/", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		var code int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/status/"), "%d", &code)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error": "status %d", "code": %d}`, code, code)
	})
	mux.HandleFunc("/slow", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	})
	mux.HandleFunc("/big", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		fmt.Fprint(w, strings.Repeat("x", 2048))
	})
	mux.HandleFunc("/redirect", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "/echo?from=redirect", nethttp.StatusFound)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func do(t *testing.T, tl *Tool, ctx context.Context, cfg M) types.Outcome {
	t.Helper()
	if ctx == nil {
		ctx = context.Background()
	}
	return tl.run(ctx, request{Config: cfg})
}

func eq(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mismatch\n got: %#v\nwant: %#v", got, want)
	}
}

func TestJSONOK(t *testing.T) {
	s := server(t)
	o := do(t, New(Options{}), nil, M{"url": s.URL + "/echo"})
	if o.Status != types.StatusOK || o.Error != nil {
		t.Fatalf("%+v %+v", o, o.Error)
	}
	r := o.Result.(M)
	data := r["data"].(M)
	eq(t, data["n"], int64(42))
	eq(t, data["f"], 2.5)
	eq(t, data["method"], "GET")
	eq(t, data["user_agent"], DefaultUserAgent)
	eq(t, r["status_code"], 200)
	eq(t, r["url"], s.URL+"/echo")
	if _, ok := r["elapsed_ms"].(int64); !ok {
		t.Fatalf("elapsed_ms %T", r["elapsed_ms"])
	}
	h := r["headers"].(M)
	eq(t, h["content-type"], "application/json")
	eq(t, h["x-multi"], "a, b")
	if o.HTTP == nil || o.HTTP.Status != 200 || o.HTTP.Headers["content-type"] != "application/json" {
		t.Fatalf("http %+v", o.HTTP)
	}
	if data["traceparent"] != "" {
		t.Fatalf("traceparent without a span: %v", data["traceparent"])
	}
}

func TestTextBinaryEmpty(t *testing.T) {
	s := server(t)
	tl := New(Options{})
	eq(t, do(t, tl, nil, M{"url": s.URL + "/text"}).Result.(M)["data"], "hello, world")
	eq(t, do(t, tl, nil, M{"url": s.URL + "/number-text"}).Result.(M)["data"], "123")
	r := do(t, tl, nil, M{"url": s.URL + "/binary"}).Result.(M)
	eq(t, r["data"], "//4AAQ==")
	eq(t, r["encoding"], "base64")
	o := do(t, tl, nil, M{"url": s.URL + "/empty"})
	if o.Status != types.StatusOK || o.Result.(M)["data"] != nil || o.Result.(M)["status_code"] != 204 {
		t.Fatalf("%+v", o)
	}
	// Redirects are followed; url is the final one.
	r = do(t, tl, nil, M{"url": s.URL + "/redirect"}).Result.(M)
	eq(t, r["url"], s.URL+"/echo?from=redirect")
}

func TestErrorStatuses(t *testing.T) {
	s := server(t)
	tl := New(Options{})
	for code, retryable := range map[int]bool{400: false, 401: false, 404: false, 408: true, 429: true, 500: true, 502: true, 503: true} {
		o := do(t, tl, nil, M{"url": s.URL + fmt.Sprintf("/status/%d", code)})
		wantKind := map[int]string{400: "client_error", 401: "auth", 404: "not_found", 408: "client_error", 429: "rate_limit",
			500: "server_error", 502: "server_error", 503: "server_error"}[code]
		if o.Status != types.StatusError || o.Error == nil || string(o.Error.Kind) != wantKind || o.Error.Status != code || o.Error.Retryable != retryable {
			t.Fatalf("%d: %+v", code, o.Error)
		}
		if !strings.Contains(o.Error.Message, fmt.Sprintf("HTTP %d", code)) || !strings.Contains(o.Error.Message, fmt.Sprintf("status %d", code)) {
			t.Fatalf("%d: message %q", code, o.Error.Message)
		}
		// The result is still filled so that policies can inspect it.
		r := o.Result.(M)
		eq(t, r["status_code"], code)
		eq(t, r["data"], M{"error": fmt.Sprintf("status %d", code), "code": int64(code)})
		eq(t, r["headers"].(M)["retry-after"], "7")
		if o.HTTP == nil || o.HTTP.Status != code {
			t.Fatalf("http %+v", o.HTTP)
		}
		m := o.ToMap()
		if m["http"].(map[string]any)["status"] != code || m["error"].(map[string]any)["retryable"] != retryable {
			t.Fatalf("ToMap %v", m)
		}
	}
}

func TestTimeout(t *testing.T) {
	s := server(t)
	tl := New(Options{})
	for _, c := range []struct {
		cfg      M
		attemptS float64
	}{
		{M{"url": s.URL + "/slow", "timeout": 0.2}, 0},
		{M{"url": s.URL + "/slow", "timeout": M{"connect": 1, "read": 0.2}}, 0},
		{M{"url": s.URL + "/slow"}, 0.2},
		{M{"url": s.URL + "/slow", "timeout": 10}, 0.2},
	} {
		start := time.Now()
		o := tl.run(context.Background(), request{Config: c.cfg, TimeoutS: c.attemptS})
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("%v: took %s", c.cfg, el)
		}
		if o.Status != types.StatusError || o.Error.Kind != "timeout" || !o.Error.Retryable || o.HTTP != nil || o.Result != nil {
			t.Fatalf("%v: %+v %+v", c.cfg, o, o.Error)
		}
		if o.ToMap()["http"] != nil {
			t.Fatal("outcome.http must be nil")
		}
	}
}

func TestNetworkError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	o := do(t, New(Options{}), nil, M{"url": "http://user:hunter2@" + addr + "/x?api_key=SECRETKEY"})
	if o.Status != types.StatusError || o.Error.Kind != "connection" || !o.Error.Retryable || o.HTTP != nil {
		t.Fatalf("%+v %+v", o, o.Error)
	}
	if strings.Contains(o.Error.Message, "hunter2") || strings.Contains(o.Error.Message, "SECRETKEY") {
		t.Fatalf("secret in message %q", o.Error.Message)
	}
}

func TestCanceled(t *testing.T) {
	s := server(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	o := do(t, New(Options{}), ctx, M{"url": s.URL + "/slow"})
	if o.Status != types.StatusError || o.Error.Kind != "canceled" {
		t.Fatalf("%+v", o.Error)
	}
}

func TestParamsEncoding(t *testing.T) {
	s := server(t)
	o := do(t, New(Options{}), nil, M{
		"url": s.URL + "/echo?keep=1",
		"params": M{
			"page": int64(2), "pageSize": 10, "whole": 3.0, "half": 0.5, "flag": true,
			"list": L{int64(1), "b"}, "skip": nil, "space": "a b&c", "obj": M{"k": "v"},
		},
	})
	data := o.Result.(M)["data"].(M)
	eq(t, data["query"], M{
		"keep": L{"1"}, "page": L{"2"}, "pageSize": L{"10"}, "whole": L{"3"}, "half": L{"0.5"},
		"flag": L{"true"}, "list": L{"1", "b"}, "space": L{"a b&c"}, "obj": L{`{"k":"v"}`},
	})
}

func TestBodies(t *testing.T) {
	s := server(t)
	tl := New(Options{})
	cases := []struct {
		cfg      M
		body, ct string
	}{
		{M{"method": "post", "json": M{"a": int64(1), "html": "<b>"}}, `{"a":1,"html":"<b>"}`, "application/json"},
		{M{"method": "POST", "body": L{int64(1), "x"}}, `[1,"x"]`, "application/json"},
		{M{"method": "PUT", "data": M{"k": true}}, `{"k":true}`, "application/json"},
		{M{"method": "POST", "body": "raw text"}, "raw text", ""},
		{M{"method": "POST", "json": `{"pre":"encoded"}`}, `{"pre":"encoded"}`, "application/json"},
		{M{"method": "POST", "body": "<x/>", "headers": M{"Content-Type": "application/xml"}}, "<x/>", "application/xml"},
	}
	for _, c := range cases {
		c.cfg["url"] = s.URL + "/echo"
		data := do(t, tl, nil, c.cfg).Result.(M)["data"].(M)
		if data["body"] != c.body || data["content_type"] != c.ct {
			t.Fatalf("%v: body %q ct %q", c.cfg, data["body"], data["content_type"])
		}
	}
	data := do(t, tl, nil, M{"url": s.URL + "/echo", "headers": M{"X-Custom": int64(7), "User-Agent": "me"}}).Result.(M)["data"].(M)
	eq(t, data["x_custom"], "7")
	eq(t, data["user_agent"], "me")
}

func TestTraceparentInjected(t *testing.T) {
	s := server(t)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	data := do(t, New(Options{}), ctx, M{"url": s.URL + "/echo"}).Result.(M)["data"].(M)
	eq(t, data["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
}

func TestBodyLimit(t *testing.T) {
	s := server(t)
	o := do(t, New(Options{MaxBodyBytes: 1024}), nil, M{"url": s.URL + "/big"})
	if o.Status != types.StatusError || o.Error.Kind != "http" || o.Error.Retryable || !strings.Contains(o.Error.Message, "exceeds the 1 KiB limit") {
		t.Fatalf("%+v", o.Error)
	}
	if o.HTTP == nil || o.HTTP.Status != 200 {
		t.Fatalf("http %+v", o.HTTP)
	}
	o = do(t, New(Options{MaxBodyBytes: 2048}), nil, M{"url": s.URL + "/big"})
	if o.Status != types.StatusOK {
		t.Fatalf("exactly at the limit: %+v", o.Error)
	}
}

func TestConfigErrors(t *testing.T) {
	tl := New(Options{})
	for _, cfg := range []M{
		{},
		{"url": "not a url"},
		{"url": "ftp://example.com/x"},
		{"url": "http://example.com", "params": L{1}},
		{"url": "http://example.com", "headers": "x"},
		{"url": "http://example.com", "timeout": "soon"},
		{"url": "http://example.com", "method": "BAD METHOD"},
		{"url": "http://example.com", "json": M{"c": make(chan int)}},
	} {
		o := do(t, tl, nil, cfg)
		if o.Status != types.StatusError || o.Error.Kind != "config" || o.Error.Retryable {
			t.Fatalf("%v: %+v", cfg, o.Error)
		}
	}
}

func TestSharedClientTransport(t *testing.T) {
	tr := SharedClient().Transport.(*nethttp.Transport)
	if tr.MaxIdleConnsPerHost != 64 || tr.DisableKeepAlives {
		t.Fatalf("transport %+v", tr)
	}
	if SharedClient() != SharedClient() {
		t.Fatal("not shared")
	}
}
