package main

import (
	"context"
	"github.com/noetl/gcpengine/shared/config"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
)

var gotEvents = make(chan event.Event, 4)

func init() {
	functions.HTTP("test-http", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" ?"+r.URL.RawQuery)
		if p := r.Header.Get("X-Forwarded-Prefix"); p != "" {
			_, _ = io.WriteString(w, " prefix "+p)
		}
	})
	functions.CloudEvent("test-ce", func(_ context.Context, e event.Event) error {
		gotEvents <- e
		return nil
	})
}

// Each function runs in its own functions-framework server (FUNCTION_TARGET
// = its name, served at "/"), behind the front's /<name> prefix: HTTP
// functions see the path without the prefix, CloudEvent functions get a
// raw Pub/Sub push body converted by the framework (the topic from the
// push endpoint's path), /metrics is the metrics handler.
func TestFunctionsHost(t *testing.T) {
	backends, err := ServeFunctions([]string{"test-http", "test-ce"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := os.LookupEnv("FUNCTION_TARGET"); ok {
		t.Errorf("FUNCTION_TARGET left set to %q", v)
	}
	if backends["test-http"] == backends["test-ce"] {
		t.Fatalf("one server for two functions: %v", backends)
	}
	front := httptest.NewServer(Front(backends, "/prom/metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metrics here")
	})))
	defer front.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for path, want := range map[string]string{
		"/test-http/executions/e1?x=1": "GET /executions/e1 ?x=1 prefix /test-http",
		"/test-http":                   "GET / ? prefix /test-http",
		"/test-http/":                  "GET / ? prefix /test-http",
		"/prom/metrics":                "metrics here", // NOETL_METRICS_PATH
	} {
		if code, body := get(path); code != 200 || body != want {
			t.Errorf("GET %s: %d %q, want %q", path, code, body, want)
		}
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics with NOETL_METRICS_PATH=/prom/metrics: %d, want 404", code)
	}
	// The prefix is the host's to say: a caller's own is replaced.
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/test-http/x", nil)
	req.Header.Set("X-Forwarded-Prefix", "/evil")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "GET /x ? prefix /test-http" {
			t.Errorf("a forwarded prefix sent by the caller: %q", b)
		}
	}
	if code, _ := get("/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", code)
	}
	if code, _ := get("/test-httpx"); code != http.StatusNotFound {
		t.Errorf("GET /test-httpx: %d, want 404", code)
	}

	push := `{"message":{"data":"eyJhIjoxfQ==","attributes":{"execution_id":"e1"},"messageId":"m-1","message_id":"m-1",` +
		`"publishTime":"2026-01-02T03:04:05.006Z","publish_time":"2026-01-02T03:04:05.006Z"},"subscription":"projects/p/subscriptions/route","deliveryAttempt":1}`
	resp, err := http.Post(front.URL+"/test-ce/projects/p/topics/events", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("push: %d", resp.StatusCode)
	}
	select {
	case e := <-gotEvents:
		if e.Type() != "google.cloud.pubsub.topic.v1.messagePublished" || e.Source() != "//pubsub.googleapis.com/projects/p/topics/events" || e.ID() != "m-1" {
			t.Errorf("CloudEvent %s %s %s", e.Type(), e.Source(), e.ID())
		}
		if !strings.Contains(string(e.Data()), `"eyJhIjoxfQ=="`) || !strings.Contains(string(e.Data()), `"execution_id":"e1"`) {
			t.Errorf("CloudEvent data %s", e.Data())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the CloudEvent function was not called")
	}

	if _, err := ServeFunctions([]string{"no-such-function"}); err == nil {
		t.Error("ServeFunctions accepted an unregistered function")
	}
}

// TestServeMetrics: NOETL_METRICS_PORT serves the endpoint on its own
// listener, at NOETL_METRICS_PATH.
func TestServeMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go func() {
		_ = ServeMetrics(addr, "/m", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "noetl_x 1") }))
	}()
	var body string
	for i := 0; i < 100; i++ {
		resp, err := http.Get("http://" + addr + "/m")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if body != "noetl_x 1" {
		t.Fatalf("GET /m on the metrics port: %q", body)
	}
}

// TestMetricsAddrFromSettings: NOETL_METRICS_PORT opens the Prometheus
// endpoint's own loopback listener (ServeMetrics on that address, shown
// by TestServeMetrics); 0, the default, opens none.
func TestMetricsAddrFromSettings(t *testing.T) {
	parse := func(env map[string]string) config.Config {
		env["NOETL_SIGNING_KEY"] = "local-test-key-0123456789abcdef0123456789ab"
		cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := metricsAddr(parse(map[string]string{"NOETL_METRICS_PORT": "9464"})); got != "127.0.0.1:9464" {
		t.Fatalf("NOETL_METRICS_PORT=9464: %q", got)
	}
	if got := metricsAddr(parse(map[string]string{})); got != "" {
		t.Fatalf("by default: %q, want no listener of its own", got)
	}
}
