package cloudtasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	// fakeClockPoll bounds how long a dispatcher sleeps when Options.Clock
	// is set, since a fake clock may jump without notice.
	fakeClockPoll = 20 * time.Millisecond
	// maxSleep bounds dispatcher sleeps with the real clock (guards against
	// wall-clock jumps).
	maxSleep = time.Minute
	// maxResponseDrain is how much of a response body is read (and
	// discarded) before the connection is released.
	maxResponseDrain = 1 << 20
)

// Dispatch header names sent to HTTP targets.
const (
	hdrQueueName        = "X-CloudTasks-QueueName"
	hdrTaskName         = "X-CloudTasks-TaskName"
	hdrRetryCount       = "X-CloudTasks-TaskRetryCount"
	hdrExecutionCount   = "X-CloudTasks-TaskExecutionCount"
	hdrETA              = "X-CloudTasks-TaskETA"
	hdrPreviousResponse = "X-CloudTasks-TaskPreviousResponse"
	hdrRetryReason      = "X-CloudTasks-TaskRetryReason"
)

// runQueue is the dispatcher loop of one queue. It exits when the queue is
// deleted or the Server stopped.
func (s *Server) runQueue(q *queue) {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		wait := s.dispatchLocked(q)
		s.mu.Unlock()

		switch {
		case s.fakeClock && (wait < 0 || wait > fakeClockPoll):
			wait = fakeClockPoll
		case wait > maxSleep:
			wait = maxSleep
		}
		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case <-s.ctx.Done():
			return
		case <-q.done:
			return
		case <-q.wake:
		case <-tc:
		}
	}
}

// dispatchLocked starts every attempt that is due and allowed by the queue's
// state and rate limits. It returns how long to sleep before the next check,
// or -1 to sleep until woken.
func (s *Server) dispatchLocked(q *queue) time.Duration {
	if q.deleted || s.stopped {
		return -1
	}
	now := s.now()
	rl := q.pb.RateLimits
	if el := now.Sub(q.refilled); el > 0 {
		q.tokens = math.Min(float64(rl.MaxBurstSize), q.tokens+el.Seconds()*rl.MaxDispatchesPerSecond)
		q.refilled = now
	} else if el < 0 {
		q.refilled = now
	}
	if q.pb.State != cloudtaskspb.Queue_RUNNING {
		return -1
	}
	next := time.Duration(-1)
	for _, t := range sortedTasks(q) {
		if t.inflight > 0 {
			continue
		}
		if now.Sub(t.pb.CreateTime.AsTime()) > maxTaskAge {
			s.removeTaskLocked(q, t, now)
			s.log.Warn("task expired", "queue", q.id, "task", shortName(t.pb.Name), "outcome", "older than 31 days, deleted")
			continue
		}
		if t.schedule.After(now) {
			next = t.schedule.Sub(now)
			break // tasks are sorted: the rest are later still
		}
		if q.inflight >= int(rl.MaxConcurrentDispatches) {
			break // a finishing attempt wakes the dispatcher
		}
		if q.tokens < 1 {
			next = max(time.Millisecond, time.Duration((1-q.tokens)/rl.MaxDispatchesPerSecond*float64(time.Second)))
			break
		}
		q.tokens--
		s.startAttemptLocked(q, t, now, false)
	}
	return next
}

// attemptSpec is an immutable snapshot of one dispatch attempt.
type attemptSpec struct {
	method     string
	url        string
	header     http.Header
	body       []byte
	deadline   time.Duration
	retryCount int32
	queue      string // short queue ID
	task       string // short task ID
	run        bool   // started by RunTask
	started    time.Time
}

// startAttemptLocked records a dispatch of t and starts the HTTP request in
// a goroutine. run marks RunTask attempts, which bypass state and limits.
func (s *Server) startAttemptLocked(q *queue, t *task, now time.Time, run bool) {
	if s.stopped {
		return
	}
	retryCount := t.pb.DispatchCount
	t.pb.DispatchCount++
	t.inflight++
	q.inflight++
	if t.firstDispatch.IsZero() {
		t.firstDispatch = now
	}
	dispatched := timestamppb.New(now.Truncate(time.Microsecond))
	att := &cloudtaskspb.Attempt{
		ScheduleTime: proto.Clone(t.pb.ScheduleTime).(*timestamppb.Timestamp),
		DispatchTime: dispatched,
	}
	if t.pb.FirstAttempt == nil {
		// Only dispatch_time is retained for the first attempt.
		t.pb.FirstAttempt = &cloudtaskspb.Attempt{DispatchTime: proto.Clone(dispatched).(*timestamppb.Timestamp)}
	}
	t.pb.LastAttempt = att
	spec := buildAttempt(q, t, retryCount)
	spec.run, spec.started = run, now
	s.authorizeLocked(q, t, &spec, now)
	s.wg.Add(1)
	go s.runAttempt(q, t, att, spec)
}

// buildAttempt computes the HTTP request for the next attempt of t,
// applying the queue-level HttpTarget overrides.
func buildAttempt(q *queue, t *task, retryCount int32) attemptSpec {
	hr := t.pb.GetHttpRequest()
	ht := q.pb.GetHttpTarget()
	method := hr.GetHttpMethod()
	if m := ht.GetHttpMethod(); m != cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		method = m
	}
	spec := attemptSpec{
		method:     method.String(),
		url:        applyURIOverride(hr.GetUrl(), ht.GetUriOverride()),
		header:     http.Header{},
		deadline:   t.pb.GetDispatchDeadline().AsDuration(),
		retryCount: retryCount,
		queue:      q.id,
		task:       shortName(t.pb.Name),
	}
	if bodyAllowed(method) {
		spec.body = hr.GetBody()
	}

	// User headers keep their spelling; later sources replace earlier ones
	// case-insensitively: task headers (sorted for determinism), then the
	// queue's header overrides.
	keys := make([]string, 0, len(hr.GetHeaders()))
	for k := range hr.GetHeaders() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := func(k, v string) {
		if reservedHeader(k) {
			return
		}
		for old := range spec.header {
			if strings.EqualFold(old, k) {
				delete(spec.header, old)
			}
		}
		spec.header[k] = []string{v}
	}
	for _, k := range keys {
		set(k, hr.Headers[k])
	}
	for _, o := range ht.GetHeaderOverrides() {
		set(o.GetHeader().GetKey(), o.GetHeader().GetValue())
	}

	spec.header[userAgentHeader] = []string{cloudTasksAgent}
	spec.header[hdrQueueName] = []string{q.id}
	spec.header[hdrTaskName] = []string{spec.task}
	spec.header[hdrRetryCount] = []string{strconv.Itoa(int(retryCount))}
	spec.header[hdrExecutionCount] = []string{strconv.Itoa(int(t.execCount))}
	spec.header[hdrETA] = []string{formatETA(t.schedule)}
	if retryCount > 0 && t.prevStatus != 0 {
		// Observed service behaviour: both headers only follow an attempt
		// that got an HTTP response, and the reason is sent empty.
		spec.header[hdrPreviousResponse] = []string{strconv.Itoa(t.prevStatus)}
		spec.header[hdrRetryReason] = []string{""}
	}
	return spec
}

// reservedHeader reports whether a user-supplied header is ignored or
// replaced by the service.
func reservedHeader(k string) bool {
	l := strings.ToLower(k)
	switch l {
	case "host", "content-length", "user-agent", "transfer-encoding", "connection":
		return true
	}
	return strings.HasPrefix(l, "x-cloudtasks-") || strings.HasPrefix(l, "x-google-") || strings.HasPrefix(l, "x-appengine-")
}

// formatETA renders a time as decimal seconds since the Unix epoch with
// microsecond precision, the format of X-CloudTasks-TaskETA.
func formatETA(t time.Time) string {
	us := t.UnixMicro()
	sec, frac := us/1e6, us%1e6
	if frac < 0 {
		sec, frac = sec-1, frac+1e6
	}
	return fmt.Sprintf("%d.%06d", sec, frac)
}

// applyURIOverride rewrites raw according to a queue-level UriOverride.
func applyURIOverride(raw string, o *cloudtaskspb.UriOverride) string {
	if o == nil || (o.UriOverrideEnforceMode == cloudtaskspb.UriOverride_IF_NOT_EXISTS && raw != "") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if o.Scheme != nil {
		switch *o.Scheme {
		case cloudtaskspb.UriOverride_HTTP:
			u.Scheme = "http"
		case cloudtaskspb.UriOverride_HTTPS:
			u.Scheme = "https"
		}
	}
	if u.Scheme == "" {
		u.Scheme = "https"
	}
	host, port := u.Hostname(), u.Port()
	if o.Host != nil {
		host = *o.Host
	}
	if o.Port != nil {
		port = ""
		if *o.Port > 0 {
			port = strconv.FormatInt(*o.Port, 10)
		}
	}
	switch {
	case port != "":
		u.Host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		u.Host = "[" + host + "]"
	default:
		u.Host = host
	}
	if o.PathOverride != nil {
		p := o.PathOverride.Path
		if p != "" && !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		u.Path, u.RawPath = p, ""
	}
	if o.QueryOverride != nil {
		u.RawQuery = o.QueryOverride.QueryParams
	}
	return u.String()
}

// attemptResult is the outcome of one HTTP request.
type attemptResult struct {
	status     int           // HTTP status; 0 when no response was received
	code       codes.Code    // gRPC code recorded in Attempt.response_status
	err        error         // transport error, if any
	retryAfter time.Duration // from a Retry-After response header
	aborted    bool          // cancelled by Stop
}

// runAttempt performs one dispatch and records its outcome.
func (s *Server) runAttempt(q *queue, t *task, att *cloudtaskspb.Attempt, spec attemptSpec) {
	defer s.wg.Done()
	if in := s.chaos; in != nil {
		if d := in.Delay(); d > 0 {
			select {
			case <-time.After(d):
			case <-s.ctx.Done():
			}
		}
		if in.Duplicate() {
			// A second delivery of the same attempt at the same moment
			// (as Cloud Tasks may do): its answer is ignored.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				res := s.send(spec)
				s.log.Info("chaos: duplicate delivery", "queue", spec.queue, "task", spec.task, "status", res.status)
			}()
		}
	}
	begin := time.Now()
	res := s.send(spec)
	s.finishAttempt(q, t, att, spec, res, time.Since(begin))
}

// send performs the HTTP request of spec within its dispatch deadline.
func (s *Server) send(spec attemptSpec) attemptResult {
	ctx, cancel := context.WithTimeout(s.ctx, spec.deadline)
	defer cancel()
	var body io.Reader
	if len(spec.body) > 0 {
		body = bytes.NewReader(spec.body)
	}
	req, err := http.NewRequestWithContext(ctx, spec.method, spec.url, body)
	if err != nil {
		return attemptResult{code: codes.InvalidArgument, err: err}
	}
	req.Header = spec.header
	resp, err := s.client.Do(req)
	if err != nil {
		switch {
		case s.ctx.Err() != nil:
			return attemptResult{aborted: true, err: err}
		case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
			return attemptResult{code: codes.DeadlineExceeded, err: err}
		default:
			return attemptResult{code: codes.Unavailable, err: err}
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseDrain))
	_ = resp.Body.Close()
	return attemptResult{
		status:     resp.StatusCode,
		code:       httpToCode(resp.StatusCode),
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
}

// finishAttempt updates the task after an attempt: delete on success,
// reschedule with backoff on failure, delete when retries are exhausted.
// It logs exactly one record per attempt.
func (s *Server) finishAttempt(q *queue, t *task, att *cloudtaskspb.Attempt, spec attemptSpec, res attemptResult, dur time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.inflight--
	q.inflight--
	q.kick()

	attrs := []any{
		"queue", spec.queue,
		"task", spec.task,
		"attempt", spec.retryCount + 1,
		"status", res.status,
		"duration_ms", dur.Milliseconds(),
		"method", spec.method,
		"url", spec.url,
	}
	if res.err != nil {
		attrs = append(attrs, "error", res.err.Error())
	}
	switch {
	case res.aborted:
		s.log.Info("dispatch attempt", append(attrs, "outcome", "aborted: emulator stopping")...)
		return
	case q.deleted || q.tasks[t.pb.Name] != t:
		s.log.Info("dispatch attempt", append(attrs, "outcome", "discarded: task or queue deleted during dispatch")...)
		return
	}

	now := s.now()
	if res.status != 0 {
		att.ResponseTime = timestamppb.New(now.Truncate(time.Microsecond))
		t.pb.ResponseCount++
	}
	msg := http.StatusText(res.status)
	if res.err != nil {
		msg = res.err.Error()
	}
	att.ResponseStatus = &spb.Status{Code: int32(res.code), Message: msg}

	if res.status >= 200 && res.status < 300 {
		s.removeTaskLocked(q, t, now)
		s.log.Info("dispatch attempt", append(attrs, "outcome", "completed")...)
		return
	}
	t.prevStatus = res.status
	if res.status != 0 && res.status < 500 {
		t.execCount++
	}
	rc := mergeRetryConfig(t.pb.RetryConfig, q.pb.RetryConfig)
	if retriesExhausted(rc, t.pb.DispatchCount, now.Sub(t.firstDispatch)) {
		s.removeTaskLocked(q, t, now)
		s.log.Warn("dispatch attempt", append(attrs, "outcome", "failed: retries exhausted, task deleted")...)
		return
	}
	delay := backoff(rc, t.pb.DispatchCount)
	if res.retryAfter > delay {
		delay = min(res.retryAfter, rc.MaxBackoff.AsDuration())
	}
	base := now
	if spec.run {
		base = spec.started
	}
	t.setSchedule(base.Add(delay))
	s.log.Info("dispatch attempt", append(attrs,
		"outcome", "failed: retry scheduled",
		"retry_in_ms", delay.Milliseconds(),
		"next_attempt", t.schedule.Format(time.RFC3339Nano))...)
}

// retriesExhausted applies RetryConfig limits after `attempts` attempts,
// the first of which was dispatched `elapsed` ago. max_attempts = -1 means
// no attempt limit and a zero max_retry_duration means no time limit; when
// both limits are set the task is retried until both are reached (the
// documented rule), otherwise until the one that is set is reached.
func retriesExhausted(rc *cloudtaskspb.RetryConfig, attempts int32, elapsed time.Duration) bool {
	attemptLimited := rc.MaxAttempts >= 0
	maxDur := rc.GetMaxRetryDuration().AsDuration()
	durLimited := maxDur > 0
	attemptsDone := attemptLimited && attempts >= rc.MaxAttempts
	durDone := durLimited && elapsed >= maxDur
	switch {
	case attemptLimited && durLimited:
		return attemptsDone && durDone
	case attemptLimited:
		return attemptsDone
	case durLimited:
		return durDone
	}
	return false
}

// backoff returns the delay before the next attempt once `attempts`
// attempts failed: min_backoff doubled max_doublings times, then increased
// linearly by min_backoff·2^max_doublings per retry, capped at max_backoff.
// With min 10s, max 300s and 3 doublings: 10s, 20s, 40s, 80s, 160s, 240s,
// 300s, 300s, ...
func backoff(rc *cloudtaskspb.RetryConfig, attempts int32) time.Duration {
	minB := rc.GetMinBackoff().AsDuration().Seconds()
	maxB := rc.GetMaxBackoff().AsDuration()
	n := float64(max(attempts-1, 0))
	d := float64(rc.GetMaxDoublings())
	var secs float64
	if n <= d {
		secs = minB * math.Pow(2, n)
	} else {
		secs = minB * math.Pow(2, d) * (1 + n - d)
	}
	if math.IsInf(secs, 0) || math.IsNaN(secs) || secs >= maxB.Seconds() {
		return maxB
	}
	return time.Duration(secs * float64(time.Second))
}

// parseRetryAfter parses a Retry-After header (delta seconds or HTTP date).
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > math.MaxInt64/int64(time.Second) {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// httpCodes maps the HTTP statuses with a canonical gRPC code of their
// own; httpToCode maps the others by range.
var httpCodes = map[int]codes.Code{
	http.StatusBadRequest:                   codes.InvalidArgument,
	http.StatusUnauthorized:                 codes.Unauthenticated,
	http.StatusForbidden:                    codes.PermissionDenied,
	http.StatusNotFound:                     codes.NotFound,
	http.StatusConflict:                     codes.Aborted,
	http.StatusRequestedRangeNotSatisfiable: codes.OutOfRange,
	http.StatusTooManyRequests:              codes.ResourceExhausted,
	499:                                     codes.Canceled,
	http.StatusNotImplemented:               codes.Unimplemented,
	http.StatusServiceUnavailable:           codes.Unavailable,
	http.StatusGatewayTimeout:               codes.DeadlineExceeded,
}

// httpToCode maps an HTTP status to the canonical gRPC code recorded in
// Attempt.response_status.
func httpToCode(st int) codes.Code {
	if c, ok := httpCodes[st]; ok {
		return c
	}
	switch {
	case st >= 200 && st < 300:
		return codes.OK
	case st >= 400 && st < 500:
		return codes.FailedPrecondition
	case st >= 500:
		return codes.Internal
	}
	return codes.Unknown
}
