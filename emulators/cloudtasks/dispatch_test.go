package cloudtasks

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestScheduleTimeHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.queue("schedule", nil)

	task := httpTask("", tg.URL)
	want := time.Now().Add(1200 * time.Millisecond)
	task.ScheduleTime = timestamppb.New(want)
	created := e.createTask(q.Name, task)
	eta := created.ScheduleTime.AsTime()
	if d := eta.Sub(want); d > 0 || d < -time.Microsecond {
		t.Fatalf("schedule_time stored as %v, want %v (µs precision)", eta, want)
	}

	time.Sleep(time.Until(eta.Add(-400 * time.Millisecond)))
	if n := tg.count(); n != 0 {
		t.Fatalf("task dispatched %d times before its schedule_time", n)
	}
	waitFor(t, 10*time.Second, "dispatch after schedule_time", func() bool { return tg.count() == 1 })
	h := tg.snapshot()[0]
	if h.at.Before(eta) {
		t.Fatalf("dispatched at %v, before schedule_time %v", h.at, eta)
	}
	sec, err := strconv.ParseFloat(h.header.Get(hdrETA), 64)
	if err != nil {
		t.Fatalf("X-CloudTasks-TaskETA %q: %v", h.header.Get(hdrETA), err)
	}
	if diff := math.Abs(sec - float64(eta.UnixMicro())/1e6); diff > 0.001 {
		t.Errorf("X-CloudTasks-TaskETA %q differs from schedule_time %v by %vs", h.header.Get(hdrETA), eta, diff)
	}
}

func TestRetryBackoffAndHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusServiceUnavailable, http.StatusNotFound, http.StatusOK))
	q := e.queue("retry", nil) // min_backoff 50ms
	created := e.createTask(q.Name, httpTask(q.Name+"/tasks/retry-me", tg.URL))

	waitFor(t, 10*time.Second, "three attempts", func() bool { return tg.count() == 3 })
	waitFor(t, 10*time.Second, "task completion", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: created.Name})
		return err != nil
	})
	hits := tg.snapshot()
	for i, h := range hits {
		if got := h.header.Get(hdrQueueName); got != "retry" {
			t.Errorf("attempt %d: %s = %q, want short queue id", i+1, hdrQueueName, got)
		}
		if got := h.header.Get(hdrTaskName); got != "retry-me" {
			t.Errorf("attempt %d: %s = %q, want short task id", i+1, hdrTaskName, got)
		}
		if got := h.header.Get(hdrRetryCount); got != strconv.Itoa(i) {
			t.Errorf("attempt %d: %s = %q, want %d", i+1, hdrRetryCount, got, i)
		}
	}
	// Execution count: responses received, not counting 5xx failures.
	for i, want := range []string{"0", "0", "1"} {
		if got := hits[i].header.Get(hdrExecutionCount); got != want {
			t.Errorf("attempt %d: %s = %q, want %s", i+1, hdrExecutionCount, got, want)
		}
	}
	if _, ok := hits[0].header[http.CanonicalHeaderKey(hdrPreviousResponse)]; ok {
		t.Errorf("first attempt carries %s", hdrPreviousResponse)
	}
	for i, want := range []string{"", "503", "404"} {
		if i == 0 {
			continue
		}
		if got := hits[i].header.Get(hdrPreviousResponse); got != want {
			t.Errorf("attempt %d: %s = %q, want %s", i+1, hdrPreviousResponse, got, want)
		}
		if _, ok := hits[i].header[http.CanonicalHeaderKey(hdrRetryReason)]; !ok {
			t.Errorf("attempt %d: no %s header", i+1, hdrRetryReason)
		}
	}
	// Backoff: 50ms after the first failure, 100ms after the second.
	if gap := hits[1].at.Sub(hits[0].at); gap < 50*time.Millisecond {
		t.Errorf("first retry after %v, want >= min_backoff 50ms", gap)
	}
	if gap := hits[2].at.Sub(hits[1].at); gap < 100*time.Millisecond {
		t.Errorf("second retry after %v, want >= doubled backoff 100ms", gap)
	}

	// One JSON log record per attempt.
	var statuses []float64
	for _, r := range e.logs.records("dispatch attempt") {
		if r["task"] != "retry-me" {
			continue
		}
		if r["queue"] != "retry" || r["duration_ms"] == nil || r["attempt"] != float64(len(statuses)+1) {
			t.Errorf("log record %v", r)
		}
		statuses = append(statuses, r["status"].(float64))
	}
	if len(statuses) != 3 || statuses[0] != 503 || statuses[1] != 404 || statuses[2] != 200 {
		t.Errorf("logged statuses %v, want [503 404 200]", statuses)
	}
}

func TestAttemptBookkeepingAndRunTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusInternalServerError, http.StatusOK))
	q := e.queue("bookkeeping", func(q *cloudtaskspb.Queue) {
		q.RetryConfig = &cloudtaskspb.RetryConfig{MinBackoff: durationpb.New(time.Hour), MaxBackoff: durationpb.New(time.Hour)}
	})
	name := e.createTask(q.Name, httpTask("", tg.URL)).Name

	var got *cloudtaskspb.Task
	waitFor(t, 10*time.Second, "first response recorded", func() bool {
		var err error
		got, err = e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
		return err == nil && got.ResponseCount == 1
	})
	if got.DispatchCount != 1 || got.FirstAttempt.GetDispatchTime() == nil {
		t.Errorf("after one attempt: dispatch_count %d, first_attempt %v", got.DispatchCount, got.FirstAttempt)
	}
	la := got.LastAttempt
	if la.GetResponseTime() == nil || codes.Code(la.GetResponseStatus().GetCode()) != codes.Internal {
		t.Errorf("last_attempt = %v, want a response with status INTERNAL", la)
	}
	if next := got.ScheduleTime.AsTime(); next.Sub(la.ResponseTime.AsTime()) < 59*time.Minute {
		t.Errorf("retry scheduled at %v, want about min_backoff (1h) after %v", next, la.ResponseTime.AsTime())
	}

	// RunTask ignores the backoff and dispatches at once.
	run, err := e.c.RunTask(e.ctx, &cloudtaskspb.RunTaskRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if run.DispatchCount != 2 {
		t.Errorf("RunTask returned dispatch_count %d, want 2", run.DispatchCount)
	}
	waitFor(t, 10*time.Second, "RunTask dispatch", func() bool { return tg.count() == 2 })
	waitFor(t, 10*time.Second, "task completion", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
		return err != nil
	})
}

func TestRunTaskOnPausedQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.pausedQueue("run-paused", nil)
	task := httpTask("", tg.URL)
	task.ScheduleTime = timestamppb.New(time.Now().Add(time.Hour))
	name := e.createTask(q.Name, task).Name

	run, err := e.c.RunTask(e.ctx, &cloudtaskspb.RunTaskRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if run.DispatchCount != 1 || run.LastAttempt.GetDispatchTime() == nil {
		t.Errorf("RunTask returned %v, want a dispatched task", run)
	}
	waitFor(t, 10*time.Second, "RunTask dispatch on a paused queue", func() bool { return tg.count() == 1 })
	waitFor(t, 10*time.Second, "task completion", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
		return err != nil
	})
	_, err = e.c.RunTask(e.ctx, &cloudtaskspb.RunTaskRequest{Name: name})
	wantCode(t, err, codes.NotFound, "RunTask(completed)")
}

func TestMaxAttemptsExhausted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusInternalServerError))
	q := e.queue("exhaust", func(q *cloudtaskspb.Queue) { q.RetryConfig = fastRetry(3) })
	name := q.Name + "/tasks/doomed"
	e.createTask(q.Name, httpTask(name, tg.URL))

	waitFor(t, 10*time.Second, "task deletion after max_attempts", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
		return err != nil
	})
	time.Sleep(300 * time.Millisecond) // room for a (wrong) extra attempt
	if n := tg.count(); n != 3 {
		t.Fatalf("target got %d attempts, want max_attempts = 3", n)
	}
	_, err := e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(name, tg.URL)})
	wantCode(t, err, codes.AlreadyExists, "CreateTask(name of exhausted task)")

	// A task-level retry_config overrides the queue's.
	tg2 := newTarget(t, statusSeq(http.StatusBadRequest))
	task := httpTask(q.Name+"/tasks/override", tg2.URL)
	task.RetryConfig = &cloudtaskspb.RetryConfig{MaxAttempts: 2}
	e.createTask(q.Name, task)
	waitFor(t, 10*time.Second, "task deletion after task-level max_attempts", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: task.Name})
		return err != nil
	})
	time.Sleep(300 * time.Millisecond)
	if n := tg2.count(); n != 2 {
		t.Fatalf("target got %d attempts, want task-level max_attempts = 2", n)
	}
}

func TestDispatchDeadlineTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{MinDispatchDeadline: 50 * time.Millisecond})
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			select {
			case <-r.Context().Done():
				return true
			case <-time.After(5 * time.Second):
			}
		}
		w.WriteHeader(http.StatusOK)
		return false
	})
	q := e.queue("deadline", nil)
	task := httpTask("", tg.URL)
	task.DispatchDeadline = durationpb.New(200 * time.Millisecond)
	created := e.createTask(q.Name, task)
	if d := created.DispatchDeadline.AsDuration(); d != 200*time.Millisecond {
		t.Fatalf("dispatch_deadline stored as %v", d)
	}

	waitFor(t, 10*time.Second, "retry after timeout", func() bool { return tg.count() == 2 })
	waitFor(t, 10*time.Second, "task completion", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: created.Name})
		return err != nil
	})
	waitFor(t, 10*time.Second, "handler to observe cancellation", func() bool { return tg.snapshot()[0].canceled })
	hits := tg.snapshot()
	if gap := hits[1].at.Sub(hits[0].at); gap < 200*time.Millisecond {
		t.Errorf("retry %v after the first attempt, want >= dispatch_deadline 200ms", gap)
	}
	if got := hits[1].header.Get(hdrRetryCount); got != "1" {
		t.Errorf("retry count after timeout = %q, want 1", got)
	}
	if got := hits[1].header.Get(hdrExecutionCount); got != "0" {
		t.Errorf("execution count after timeout = %q, want 0 (no response)", got)
	}
	if _, ok := hits[1].header[http.CanonicalHeaderKey(hdrPreviousResponse)]; ok {
		t.Errorf("%s sent after an attempt without response", hdrPreviousResponse)
	}
}

func TestMaxConcurrentDispatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var inflight, peak atomic.Int32
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		inflight.Add(-1)
		w.WriteHeader(http.StatusOK)
		return false
	})
	q := e.pausedQueue("concurrency", func(q *cloudtaskspb.Queue) {
		q.RateLimits = &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 2}
	})
	const n = 6
	for i := 0; i < n; i++ {
		e.createTask(q.Name, httpTask("", tg.URL))
	}
	if _, err := e.c.ResumeQueue(e.ctx, &cloudtaskspb.ResumeQueueRequest{Name: q.Name}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "all tasks dispatched", func() bool { return tg.count() == n })
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrent requests = %d, want max_concurrent_dispatches = 2", p)
	}
}

func TestMaxDispatchesPerSecond(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.pausedQueue("rate", func(q *cloudtaskspb.Queue) {
		q.RateLimits = &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 10}
	})
	burst := int(q.RateLimits.MaxBurstSize)
	if burst <= 0 || burst > 10 {
		t.Fatalf("max_burst_size = %d for 10 dispatches/s", burst)
	}
	n := burst + 5
	for i := 0; i < n; i++ {
		e.createTask(q.Name, httpTask("", tg.URL))
	}
	if _, err := e.c.ResumeQueue(e.ctx, &cloudtaskspb.ResumeQueueRequest{Name: q.Name}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "all tasks dispatched", func() bool { return tg.count() == n })
	hits := tg.snapshot()
	// After the burst, 5 more tokens at 10/s take at least ~500ms.
	if span := hits[n-1].at.Sub(hits[0].at); span < 400*time.Millisecond {
		t.Fatalf("%d dispatches took %v, faster than 10/s after a burst of %d", n, span, burst)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.pausedQueue("pause", nil)
	name := e.createTask(q.Name, httpTask("", tg.URL)).Name
	time.Sleep(300 * time.Millisecond)
	if n := tg.count(); n != 0 {
		t.Fatalf("paused queue dispatched %d requests", n)
	}
	got, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
	if err != nil || got.DispatchCount != 0 {
		t.Fatalf("task on paused queue = %v, %v", got, err)
	}
	if _, err := e.c.ResumeQueue(e.ctx, &cloudtaskspb.ResumeQueueRequest{Name: q.Name}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "dispatch after resume", func() bool { return tg.count() == 1 })
}

func TestHeadersAndBodyPassthrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusNoContent))
	q := e.queue("passthrough", nil)
	task := httpTask(q.Name+"/tasks/pass", tg.URL+"/hook/path?x=1&y=two")
	hr := task.GetHttpRequest()
	hr.HttpMethod = cloudtaskspb.HttpMethod_PUT
	hr.Body = []byte(`{"hello":"world"}`)
	hr.Headers = map[string]string{
		"traceparent":           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Content-Type":          "application/json",
		"X-Custom":              "custom-value",
		"X-CloudTasks-TaskName": "spoofed",
		"User-Agent":            "my-agent",
	}
	created := e.createTask(q.Name, task)
	if created.GetHttpRequest().GetHeaders()["X-Custom"] != "custom-value" {
		t.Errorf("stored headers = %v", created.GetHttpRequest().GetHeaders())
	}

	waitFor(t, 10*time.Second, "dispatch", func() bool { return tg.count() == 1 })
	h := tg.snapshot()[0]
	if h.method != http.MethodPut || h.path != "/hook/path" || h.query != "x=1&y=two" {
		t.Errorf("request = %s %s?%s", h.method, h.path, h.query)
	}
	if string(h.body) != `{"hello":"world"}` {
		t.Errorf("body = %q", h.body)
	}
	for k, want := range map[string]string{
		"Traceparent":  hr.Headers["traceparent"],
		"Content-Type": "application/json",
		"X-Custom":     "custom-value",
		"User-Agent":   "Google-Cloud-Tasks",
		hdrTaskName:    "pass",
		hdrQueueName:   "passthrough",
		hdrRetryCount:  "0",
	} {
		if got := h.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	waitFor(t, 10*time.Second, "204 to complete the task", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: created.Name})
		return err != nil
	})
}

func TestQueueHTTPTargetOverrides(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	path := "/overridden"
	q := e.queue("override", func(q *cloudtaskspb.Queue) {
		q.HttpTarget = &cloudtaskspb.HttpTarget{
			HttpMethod:      cloudtaskspb.HttpMethod_PATCH,
			UriOverride:     &cloudtaskspb.UriOverride{PathOverride: &cloudtaskspb.PathOverride{Path: path}},
			HeaderOverrides: []*cloudtaskspb.HttpTarget_HeaderOverride{{Header: &cloudtaskspb.HttpTarget_Header{Key: "X-Queue", Value: "q"}}},
		}
	})
	task := httpTask("", tg.URL+"/original")
	task.GetHttpRequest().Headers = map[string]string{"x-queue": "task"}
	e.createTask(q.Name, task)
	waitFor(t, 10*time.Second, "dispatch", func() bool { return tg.count() == 1 })
	h := tg.snapshot()[0]
	if h.method != http.MethodPatch || h.path != path || h.header.Get("X-Queue") != "q" {
		t.Errorf("request = %s %s X-Queue=%q, want queue-level overrides", h.method, h.path, h.header.Get("X-Queue"))
	}
}

func TestDeleteDuringDispatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	release := make(chan struct{})
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		<-release
		w.WriteHeader(http.StatusInternalServerError)
		return false
	})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	q := e.queue("delete-inflight", nil)
	name := e.createTask(q.Name, httpTask("", tg.URL)).Name
	waitFor(t, 10*time.Second, "dispatch start", func() bool { return tg.count() == 1 })

	if err := e.c.DeleteTask(e.ctx, &cloudtaskspb.DeleteTaskRequest{Name: name}); err != nil {
		t.Fatalf("DeleteTask of a task being dispatched: %v", err)
	}
	once.Do(func() { close(release) })
	time.Sleep(300 * time.Millisecond) // min_backoff is 50ms: a retry would show
	if n := tg.count(); n != 1 {
		t.Fatalf("deleted task was retried: %d requests", n)
	}
	_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
	wantCode(t, err, codes.NotFound, "GetTask after deleting in flight")
}

func TestStopCancelsInflight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	canceled := make(chan struct{})
	tg := newTarget(t, func(_ int, w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
			close(canceled)
			return true
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
		return false
	})
	q := e.queue("stop", nil)
	e.createTask(q.Name, httpTask("", tg.URL))
	waitFor(t, 10*time.Second, "dispatch start", func() bool { return tg.count() == 1 })

	stopped := make(chan struct{})
	go func() { e.srv.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight dispatch not cancelled by Stop")
	}
	select {
	case err := <-e.served:
		if err != nil {
			t.Fatalf("Serve returned %v after Stop", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Stop")
	}
}

func TestBackoffAlgorithm(t *testing.T) {
	t.Parallel()
	// The documented example: min 10s, max 300s, 3 doublings.
	rc := &cloudtaskspb.RetryConfig{
		MinBackoff:   durationpb.New(10 * time.Second),
		MaxBackoff:   durationpb.New(300 * time.Second),
		MaxDoublings: 3,
	}
	want := []time.Duration{10, 20, 40, 80, 160, 240, 300, 300}
	for i, w := range want {
		if got := backoff(rc, int32(i+1)); got != w*time.Second {
			t.Errorf("backoff after %d attempts = %v, want %v", i+1, got, w*time.Second)
		}
	}
	// Attempt and duration limits.
	limited := &cloudtaskspb.RetryConfig{MaxAttempts: 3}
	if retriesExhausted(limited, 2, 0) || !retriesExhausted(limited, 3, 0) {
		t.Error("max_attempts 3 not applied")
	}
	if retriesExhausted(&cloudtaskspb.RetryConfig{MaxAttempts: -1}, 1000, time.Hour) {
		t.Error("max_attempts -1 should be unlimited")
	}
	both := &cloudtaskspb.RetryConfig{MaxAttempts: 3, MaxRetryDuration: durationpb.New(time.Minute)}
	if retriesExhausted(both, 5, time.Second) || retriesExhausted(both, 1, time.Hour) || !retriesExhausted(both, 3, time.Minute) {
		t.Error("with both limits set, retries stop only once both are reached")
	}
	if !retriesExhausted(&cloudtaskspb.RetryConfig{MaxAttempts: -1, MaxRetryDuration: durationpb.New(time.Minute)}, 50, time.Minute) {
		t.Error("max_retry_duration alone not applied")
	}
}
