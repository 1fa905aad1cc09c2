package cloudtasks

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Queue defaults and limits documented for Cloud Tasks v2.
const (
	defaultMaxDispatchesPerSecond  = 500.0
	maxMaxDispatchesPerSecond      = 500.0
	defaultMaxConcurrentDispatches = 1000
	maxMaxConcurrentDispatches     = 5000
	defaultMaxAttempts             = 100
	defaultMinBackoff              = 100 * time.Millisecond
	defaultMaxBackoff              = 3600 * time.Second
	defaultMaxDoublings            = 16
	maxQueuePageSize               = 9800
)

// queue is the in-memory state of one queue. All fields are guarded by
// Server.mu.
type queue struct {
	name   string
	id     string
	pb     *cloudtaskspb.Queue // configuration, state and purge_time
	policy *iampb.Policy
	tasks  map[string]*task // by full task name

	wake     chan struct{} // buffered(1): poke the dispatcher
	done     chan struct{} // closed when the queue is deleted
	deleted  bool
	inflight int       // attempts currently in flight
	tokens   float64   // token bucket level
	refilled time.Time // last token bucket refill
}

// burstFor picks max_burst_size from max_dispatches_per_second: one second
// worth of tokens, at least 1 and at most 100 (the real service reports 100
// for the default 500/s; its exact rule is undocumented).
func burstFor(rate float64) int32 {
	b := math.Ceil(rate)
	if b < 1 {
		b = 1
	}
	if b > 100 {
		b = 100
	}
	return int32(b)
}

// normalizeRateLimits validates r and fills defaults. max_burst_size is
// output only and always recomputed.
func normalizeRateLimits(r *cloudtaskspb.RateLimits) (*cloudtaskspb.RateLimits, error) {
	out := &cloudtaskspb.RateLimits{}
	if r != nil {
		out.MaxDispatchesPerSecond = r.MaxDispatchesPerSecond
		out.MaxConcurrentDispatches = r.MaxConcurrentDispatches
	}
	switch {
	case math.IsNaN(out.MaxDispatchesPerSecond) || out.MaxDispatchesPerSecond < 0:
		return nil, status.Error(codes.InvalidArgument, "RateLimits.maxDispatchesPerSecond cannot be negative.")
	case out.MaxDispatchesPerSecond > maxMaxDispatchesPerSecond:
		return nil, status.Error(codes.InvalidArgument, "RateLimits.maxDispatchesPerSecond must be less than or equal to 500.")
	case out.MaxConcurrentDispatches < 0:
		return nil, status.Error(codes.InvalidArgument, "RateLimits.maxConcurrentDispatches cannot be negative.")
	case out.MaxConcurrentDispatches > maxMaxConcurrentDispatches:
		return nil, status.Error(codes.InvalidArgument, "RateLimits.maxConcurrentDispatches must be less than or equal to 5000.")
	}
	if out.MaxDispatchesPerSecond == 0 {
		out.MaxDispatchesPerSecond = defaultMaxDispatchesPerSecond
	}
	if out.MaxConcurrentDispatches == 0 {
		out.MaxConcurrentDispatches = defaultMaxConcurrentDispatches
	}
	out.MaxBurstSize = burstFor(out.MaxDispatchesPerSecond)
	return out, nil
}

// validateRetryConfig checks the sign rules of a RetryConfig without
// applying defaults.
func validateRetryConfig(r *cloudtaskspb.RetryConfig) error {
	if r == nil {
		return nil
	}
	bad := func(d *durationpb.Duration) bool {
		return d != nil && (d.CheckValid() != nil || d.AsDuration() < 0)
	}
	switch {
	case r.MaxAttempts < -1:
		return status.Error(codes.InvalidArgument, "RetryConfig.maxAttempts must be greater or equal to -1.")
	case bad(r.MaxRetryDuration):
		return status.Error(codes.InvalidArgument, "RetryConfig.maxRetryDuration cannot be negative.")
	case bad(r.MinBackoff):
		return status.Error(codes.InvalidArgument, "RetryConfig.minBackoff cannot be negative.")
	case bad(r.MaxBackoff):
		return status.Error(codes.InvalidArgument, "RetryConfig.maxBackoff cannot be negative.")
	case r.MaxDoublings < 0:
		return status.Error(codes.InvalidArgument, "RetryConfig.maxDoublings cannot be negative.")
	}
	return nil
}

// mergeRetryConfig returns r with every unset (zero) field taken from base.
// base must be fully populated.
func mergeRetryConfig(r, base *cloudtaskspb.RetryConfig) *cloudtaskspb.RetryConfig {
	out := proto.Clone(base).(*cloudtaskspb.RetryConfig)
	if r == nil {
		return out
	}
	if r.MaxAttempts != 0 {
		out.MaxAttempts = r.MaxAttempts
	}
	if r.MaxRetryDuration != nil && r.MaxRetryDuration.AsDuration() != 0 {
		out.MaxRetryDuration = durationpb.New(r.MaxRetryDuration.AsDuration())
	}
	if r.MinBackoff != nil && r.MinBackoff.AsDuration() != 0 {
		out.MinBackoff = durationpb.New(r.MinBackoff.AsDuration())
	}
	if r.MaxBackoff != nil && r.MaxBackoff.AsDuration() != 0 {
		out.MaxBackoff = durationpb.New(r.MaxBackoff.AsDuration())
	}
	if r.MaxDoublings != 0 {
		out.MaxDoublings = r.MaxDoublings
	}
	return out
}

// defaultRetryConfig is the documented queue default.
func defaultRetryConfig() *cloudtaskspb.RetryConfig {
	return &cloudtaskspb.RetryConfig{
		MaxAttempts:  defaultMaxAttempts,
		MinBackoff:   durationpb.New(defaultMinBackoff),
		MaxBackoff:   durationpb.New(defaultMaxBackoff),
		MaxDoublings: defaultMaxDoublings,
	}
}

// normalizeRetryConfig validates r and fills the documented defaults.
func normalizeRetryConfig(r *cloudtaskspb.RetryConfig) (*cloudtaskspb.RetryConfig, error) {
	if err := validateRetryConfig(r); err != nil {
		return nil, err
	}
	out := mergeRetryConfig(r, defaultRetryConfig())
	if out.MinBackoff.AsDuration() > out.MaxBackoff.AsDuration() {
		return nil, status.Error(codes.InvalidArgument, "RetryConfig.minBackoff must be less than or equal to RetryConfig.maxBackoff.")
	}
	return out, nil
}

// validateHTTPTarget checks a queue-level HttpTarget.
func validateHTTPTarget(h *cloudtaskspb.HttpTarget) error {
	if h == nil {
		return nil
	}
	if u := h.UriOverride; u != nil {
		if u.Host != nil && *u.Host == "" {
			return status.Error(codes.InvalidArgument, "HttpTarget.uriOverride.host cannot be empty.")
		}
		if u.Port != nil && (*u.Port < 0 || *u.Port > 65535) {
			return status.Error(codes.InvalidArgument, "HttpTarget.uriOverride.port must be a positive integer.")
		}
	}
	for _, o := range h.HeaderOverrides {
		if k, v := o.GetHeader().GetKey(), o.GetHeader().GetValue(); !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return status.Errorf(codes.InvalidArgument, "HttpTarget.headerOverrides contains an invalid header %q.", k)
		}
	}
	return nil
}

// normalizeQueue validates the mutable configuration of q in place and
// fills defaults.
func normalizeQueue(q *cloudtaskspb.Queue) error {
	rl, err := normalizeRateLimits(q.RateLimits)
	if err != nil {
		return err
	}
	rc, err := normalizeRetryConfig(q.RetryConfig)
	if err != nil {
		return err
	}
	if err := validateHTTPTarget(q.HttpTarget); err != nil {
		return err
	}
	if c := q.StackdriverLoggingConfig; c != nil && (c.SamplingRatio < 0 || c.SamplingRatio > 1 || math.IsNaN(c.SamplingRatio)) {
		return status.Error(codes.InvalidArgument, "StackdriverLoggingConfig.samplingRatio must be between 0 and 1.")
	}
	q.RateLimits, q.RetryConfig = rl, rc
	return nil
}

// newQueueLocked stores a queue whose configuration is already normalized
// and starts its dispatcher.
func (s *Server) newQueueLocked(pb *cloudtaskspb.Queue, now time.Time) *queue {
	_, id, _ := parseQueueName(pb.Name)
	pb.State = cloudtaskspb.Queue_RUNNING
	pb.PurgeTime = nil
	q := &queue{
		name:     pb.Name,
		id:       id,
		pb:       pb,
		tasks:    map[string]*task{},
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		tokens:   float64(pb.RateLimits.MaxBurstSize),
		refilled: now,
	}
	s.queues[q.name] = q
	delete(s.queueTombs, q.name)
	if !s.stopped {
		s.wg.Add(1)
		go s.runQueue(q)
	}
	s.log.Info("queue created", "queue", q.name)
	return q
}

// queueLocked returns the queue named name or a NotFound error.
func (s *Server) queueLocked(name string) (*queue, error) {
	if _, _, err := parseQueueName(name); err != nil {
		return nil, err
	}
	q, ok := s.queues[name]
	if !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	return q, nil
}

// kick wakes the dispatcher of q without blocking.
func (q *queue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// removeQueueLocked deletes q and tombstones its tasks.
func (s *Server) removeQueueLocked(q *queue, now time.Time) {
	for name := range q.tasks {
		s.tombstoneLocked(name, now)
	}
	q.tasks = map[string]*task{}
	q.deleted = true
	close(q.done)
	delete(s.queues, q.name)
	if s.queueTombTTL > 0 {
		s.queueTombs[q.name] = now
	}
}

// queueView returns a copy of q's proto safe to hand out.
func queueView(q *queue) *cloudtaskspb.Queue {
	return proto.Clone(q.pb).(*cloudtaskspb.Queue)
}

// ListQueues lists the queues under req.Parent (projects/P/locations/L) in
// lexicographical order. req.Filter may be empty or "state: STATE" /
// "state = STATE" (InvalidArgument otherwise). req.PageSize ≤ 0 or > 9800
// means 9800 (negative is InvalidArgument); req.PageToken is the
// NextPageToken of a previous response.
func (s *Server) ListQueues(_ context.Context, req *cloudtaskspb.ListQueuesRequest) (*cloudtaskspb.ListQueuesResponse, error) {
	if err := parseLocation(req.GetParent()); err != nil {
		return nil, err
	}
	want, err := parseStateFilter(req.GetFilter())
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), maxQueuePageSize)
	if err != nil {
		return nil, err
	}
	after := ""
	if tok := req.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(b) == 0 {
			return nil, status.Error(codes.InvalidArgument, "Invalid page token.")
		}
		after = string(b)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := req.GetParent() + "/queues/"
	var names []string
	for name, q := range s.queues {
		if strings.HasPrefix(name, prefix) && name > after &&
			(want == cloudtaskspb.Queue_STATE_UNSPECIFIED || q.pb.State == want) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	resp := &cloudtaskspb.ListQueuesResponse{}
	for i, name := range names {
		if i == size {
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(names[i-1]))
			break
		}
		resp.Queues = append(resp.Queues, queueView(s.queues[name]))
	}
	return resp, nil
}

var stateFilterRe = regexp.MustCompile(`^\s*state\s*[:=]\s*"?([A-Za-z_]+)"?\s*$`)

// parseStateFilter understands the one filter the real service documents.
func parseStateFilter(f string) (cloudtaskspb.Queue_State, error) {
	if strings.TrimSpace(f) == "" {
		return cloudtaskspb.Queue_STATE_UNSPECIFIED, nil
	}
	m := stateFilterRe.FindStringSubmatch(f)
	if m == nil {
		return 0, status.Errorf(codes.InvalidArgument, "Invalid filter %q: only \"state: <STATE>\" is supported.", f)
	}
	v, ok := cloudtaskspb.Queue_State_value[strings.ToUpper(m[1])]
	if !ok || v == 0 {
		return 0, status.Errorf(codes.InvalidArgument, "Invalid filter %q: unknown queue state.", f)
	}
	return cloudtaskspb.Queue_State(v), nil
}

// pageSize validates a requested page size against a maximum.
func pageSize(n int32, max int) (int, error) {
	if n < 0 {
		return 0, status.Error(codes.InvalidArgument, "page_size cannot be negative.")
	}
	if n == 0 || int(n) > max {
		return max, nil
	}
	return int(n), nil
}

// GetQueue returns the queue named req.Name, NotFound if it does not exist
// and InvalidArgument if the name is malformed.
func (s *Server) GetQueue(_ context.Context, req *cloudtaskspb.GetQueueRequest) (*cloudtaskspb.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(req.GetName())
	if err != nil {
		return nil, err
	}
	return queueView(q), nil
}

// CreateQueue creates req.Queue under req.Parent. Unset rate limits and
// retry settings get the documented defaults (500 dispatches/s, 1000
// concurrent dispatches, 100 attempts, backoff 0.1s..3600s, 16 doublings);
// state is RUNNING. Errors: InvalidArgument (malformed names, queue not under
// parent, invalid limits), AlreadyExists, FailedPrecondition (name deleted
// within Options.QueueTombstoneTTL).
func (s *Server) CreateQueue(_ context.Context, req *cloudtaskspb.CreateQueueRequest) (*cloudtaskspb.Queue, error) {
	if err := parseLocation(req.GetParent()); err != nil {
		return nil, err
	}
	if req.GetQueue() == nil {
		return nil, status.Error(codes.InvalidArgument, "Queue is required.")
	}
	pb := proto.Clone(req.GetQueue()).(*cloudtaskspb.Queue)
	parent, _, err := parseQueueName(pb.GetName())
	if err != nil {
		return nil, err
	}
	if parent != req.GetParent() {
		return nil, status.Errorf(codes.InvalidArgument, "The queue name (%q) must be in the parent (%q).", pb.Name, req.GetParent())
	}
	if err := normalizeQueue(pb); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweepLocked(now)
	if _, ok := s.queues[pb.Name]; ok {
		return nil, status.Error(codes.AlreadyExists, msgQueueExists)
	}
	if at, ok := s.queueTombs[pb.Name]; ok && now.Sub(at) < s.queueTombTTL {
		return nil, status.Error(codes.FailedPrecondition, msgQueueRecent)
	}
	return queueView(s.newQueueLocked(pb, now)), nil
}

// updatableQueueFields are the top-level Queue fields UpdateQueue may set.
var updatableQueueFields = map[string]bool{
	"name":                        true,
	"rate_limits":                 true,
	"retry_config":                true,
	"http_target":                 true,
	"app_engine_routing_override": true,
	"stackdriver_logging_config":  true,
}

// UpdateQueue updates the queue named req.Queue.Name, creating it if it does
// not exist. With an empty req.UpdateMask every mutable field is replaced;
// otherwise only the listed paths (e.g. "rate_limits",
// "retry_config.max_attempts", "http_target") are. Output-only fields
// (state, purge_time, rate_limits.max_burst_size) cannot be masked:
// InvalidArgument, as for unknown paths and invalid values.
func (s *Server) UpdateQueue(_ context.Context, req *cloudtaskspb.UpdateQueueRequest) (*cloudtaskspb.Queue, error) {
	if req.GetQueue() == nil {
		return nil, status.Error(codes.InvalidArgument, "Queue is required.")
	}
	src := proto.Clone(req.GetQueue()).(*cloudtaskspb.Queue)
	if _, _, err := parseQueueName(src.GetName()); err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range req.GetUpdateMask().GetPaths() {
		p = camelToSnake(p)
		top := strings.SplitN(p, ".", 2)[0]
		if !updatableQueueFields[top] || p == "rate_limits.max_burst_size" {
			return nil, status.Errorf(codes.InvalidArgument, "Invalid update_mask path %q.", p)
		}
		paths = append(paths, p)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	q, exists := s.queues[src.Name]
	var dst *cloudtaskspb.Queue
	if exists {
		dst = proto.Clone(q.pb).(*cloudtaskspb.Queue)
	} else {
		if at, ok := s.queueTombs[src.Name]; ok && now.Sub(at) < s.queueTombTTL {
			return nil, status.Error(codes.FailedPrecondition, msgQueueRecent)
		}
		dst = &cloudtaskspb.Queue{Name: src.Name}
	}
	if len(paths) == 0 {
		dst.RateLimits = src.RateLimits
		dst.RetryConfig = src.RetryConfig
		dst.HttpTarget = src.HttpTarget
		dst.AppEngineRoutingOverride = src.AppEngineRoutingOverride
		dst.StackdriverLoggingConfig = src.StackdriverLoggingConfig
	} else {
		for _, p := range paths {
			if p == "name" {
				continue
			}
			if err := copyPath(dst.ProtoReflect(), src.ProtoReflect(), strings.Split(p, ".")); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "Invalid update_mask path %q: %v.", p, err)
			}
		}
	}
	if err := normalizeQueue(dst); err != nil {
		return nil, err
	}
	if !exists {
		return queueView(s.newQueueLocked(dst, now)), nil
	}
	if dst.RateLimits.MaxBurstSize != q.pb.RateLimits.MaxBurstSize && q.tokens > float64(dst.RateLimits.MaxBurstSize) {
		q.tokens = float64(dst.RateLimits.MaxBurstSize)
	}
	q.pb = dst
	q.kick()
	return queueView(q), nil
}

// copyPath copies the field at path from src to dst (clearing it in dst if
// unset in src), creating intermediate messages in dst as needed.
func copyPath(dst, src protoreflect.Message, path []string) error {
	fd := dst.Descriptor().Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil {
		return fmt.Errorf("unknown field %q", path[0])
	}
	if len(path) == 1 {
		if src.Has(fd) {
			dst.Set(fd, src.Get(fd))
		} else {
			dst.Clear(fd)
		}
		return nil
	}
	if fd.Message() == nil || fd.IsList() || fd.IsMap() {
		return fmt.Errorf("field %q has no subfields", path[0])
	}
	return copyPath(dst.Mutable(fd).Message(), src.Get(fd).Message(), path[1:])
}

// camelToSnake turns "rateLimits.maxBurstSize" into "rate_limits.max_burst_size".
func camelToSnake(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DeleteQueue deletes the queue named req.Name and all its tasks (their
// names are tombstoned; attempts in flight finish but their outcome is
// discarded). Errors: InvalidArgument, NotFound.
func (s *Server) DeleteQueue(_ context.Context, req *cloudtaskspb.DeleteQueueRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, _, err := parseQueueName(req.GetName()); err != nil {
		return nil, err
	}
	q, ok := s.queues[req.GetName()]
	if !ok {
		return nil, status.Error(codes.NotFound, msgNotFound)
	}
	s.removeQueueLocked(q, s.now())
	s.log.Info("queue deleted", "queue", q.name)
	return &emptypb.Empty{}, nil
}

// PurgeQueue deletes every task of the queue named req.Name (tombstoning
// their names), sets purge_time and returns the queue. Errors:
// InvalidArgument, NotFound.
func (s *Server) PurgeQueue(_ context.Context, req *cloudtaskspb.PurgeQueueRequest) (*cloudtaskspb.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(req.GetName())
	if err != nil {
		return nil, err
	}
	now := s.now()
	for name := range q.tasks {
		s.tombstoneLocked(name, now)
	}
	n := len(q.tasks)
	q.tasks = map[string]*task{}
	q.pb.PurgeTime = timestamppb.New(now.Truncate(time.Microsecond))
	s.log.Info("queue purged", "queue", q.name, "tasks", n)
	return queueView(q), nil
}

// PauseQueue sets the queue's state to PAUSED: tasks can still be created
// but none is dispatched (except through RunTask) until ResumeQueue.
// Errors: InvalidArgument, NotFound.
func (s *Server) PauseQueue(_ context.Context, req *cloudtaskspb.PauseQueueRequest) (*cloudtaskspb.Queue, error) {
	return s.setState(req.GetName(), cloudtaskspb.Queue_PAUSED)
}

// ResumeQueue sets the queue's state to RUNNING. Errors: InvalidArgument,
// NotFound.
func (s *Server) ResumeQueue(_ context.Context, req *cloudtaskspb.ResumeQueueRequest) (*cloudtaskspb.Queue, error) {
	return s.setState(req.GetName(), cloudtaskspb.Queue_RUNNING)
}

func (s *Server) setState(name string, st cloudtaskspb.Queue_State) (*cloudtaskspb.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	if q.pb.State != st {
		q.pb.State = st
		s.log.Info("queue state changed", "queue", q.name, "state", st.String())
	}
	q.kick()
	return queueView(q), nil
}
