package cloudtasks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ctapi "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

const testLoc = "projects/test-project/locations/us-central1"

// env is an emulator served on a loopback listener plus an official client.
type env struct {
	t      *testing.T
	srv    *Server
	c      *ctapi.Client
	ctx    context.Context
	logs   *syncBuffer
	served chan error
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the decoded JSON log records with the given message.
func (s *syncBuffer) records(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(s.b.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c, err := ctapi.NewClient(ctx,
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		srv.Stop()
		cancel()
	})
	return &env{t: t, srv: srv, c: c, ctx: ctx, logs: logs, served: served}
}

// fastRetry is a retry policy with small backoffs for quick tests.
func fastRetry(maxAttempts int32) *cloudtaskspb.RetryConfig {
	return &cloudtaskspb.RetryConfig{
		MaxAttempts: maxAttempts,
		MinBackoff:  durationpb.New(50 * time.Millisecond),
		MaxBackoff:  durationpb.New(time.Second),
	}
}

// queue creates a queue with the given short ID; mod may adjust it first.
func (e *env) queue(id string, mod func(*cloudtaskspb.Queue)) *cloudtaskspb.Queue {
	e.t.Helper()
	q := &cloudtaskspb.Queue{Name: testLoc + "/queues/" + id, RetryConfig: fastRetry(10)}
	if mod != nil {
		mod(q)
	}
	got, err := e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLoc, Queue: q})
	if err != nil {
		e.t.Fatalf("CreateQueue(%s): %v", id, err)
	}
	return got
}

// pausedQueue creates a queue and pauses it.
func (e *env) pausedQueue(id string, mod func(*cloudtaskspb.Queue)) *cloudtaskspb.Queue {
	e.t.Helper()
	q := e.queue(id, mod)
	q, err := e.c.PauseQueue(e.ctx, &cloudtaskspb.PauseQueueRequest{Name: q.Name})
	if err != nil {
		e.t.Fatalf("PauseQueue: %v", err)
	}
	return q
}

// httpTask builds an HTTP task for url; name may be empty.
func httpTask(name, url string) *cloudtaskspb.Task {
	return &cloudtaskspb.Task{
		Name: name,
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url: url,
		}},
	}
}

func (e *env) createTask(queue string, t *cloudtaskspb.Task) *cloudtaskspb.Task {
	e.t.Helper()
	got, err := e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: t})
	if err != nil {
		e.t.Fatalf("CreateTask: %v", err)
	}
	return got
}

// wantCode fails unless err carries the gRPC code want.
func wantCode(t *testing.T, err error, want codes.Code, what string) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: got code %v (err %v), want %v", what, got, err, want)
	}
}

// waitFor polls cond until it holds or the (generous) timeout expires.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hit is one request received by a target.
type hit struct {
	at       time.Time
	method   string
	path     string
	query    string
	header   http.Header
	body     []byte
	canceled bool // the handler saw the request context end
}

// target is an httptest server that records requests; respond decides the
// answer for the n-th (1-based) request.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	hits    []hit
	respond func(n int, w http.ResponseWriter, r *http.Request) (canceled bool)
}

func newTarget(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request) bool) *target {
	tg := &target{respond: respond}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		tg.hits = append(tg.hits, hit{
			at: time.Now(), method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
			header: r.Header.Clone(), body: body,
		})
		n := len(tg.hits)
		tg.mu.Unlock()
		canceled := false
		if tg.respond != nil {
			canceled = tg.respond(n, w, r)
		}
		if canceled {
			tg.mu.Lock()
			tg.hits[n-1].canceled = true
			tg.mu.Unlock()
		}
	}))
	t.Cleanup(tg.Close)
	return tg
}

// statusSeq answers the n-th request with codes[n-1] (the last code repeats).
func statusSeq(codes ...int) func(int, http.ResponseWriter, *http.Request) bool {
	return func(n int, w http.ResponseWriter, _ *http.Request) bool {
		if n > len(codes) {
			n = len(codes)
		}
		w.WriteHeader(codes[n-1])
		return false
	}
}

func (tg *target) count() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.hits)
}

func (tg *target) snapshot() []hit {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]hit(nil), tg.hits...)
}

// fakeClock is an adjustable clock for Options.Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}
