package cloudtasks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Task limits documented for Cloud Tasks v2.
const (
	maxTaskSize       = 100 * 1024
	maxHeadersSize    = 80 * 1024
	maxURLLength      = 2083
	maxScheduleAhead  = 30 * 24 * time.Hour
	maxTaskAge        = 31 * 24 * time.Hour
	maxTaskPageSize   = 1000
	userAgentHeader   = "User-Agent"
	cloudTasksAgent   = "Google-Cloud-Tasks"
	maxBatchCreate    = 100
	maxBatchDeleteLen = 1000
)

// task is the in-memory state of one task. All fields are guarded by
// Server.mu.
type task struct {
	pb            *cloudtaskspb.Task // FULL view as stored
	schedule      time.Time          // == pb.ScheduleTime
	inflight      int                // attempts in flight for this task
	firstDispatch time.Time          // for RetryConfig.max_retry_duration
	execCount     int32              // non-5xx responses (X-CloudTasks-TaskExecutionCount)
	prevStatus    int                // HTTP status of the previous attempt; 0 = no response
}

func (t *task) setSchedule(at time.Time) {
	at = at.Truncate(time.Microsecond)
	t.schedule = at
	t.pb.ScheduleTime = timestamppb.New(at)
}

// taskView returns a copy of t's proto in the requested view. BASIC (the
// default) omits the request body.
func taskView(t *task, view cloudtaskspb.Task_View) *cloudtaskspb.Task {
	out := proto.Clone(t.pb).(*cloudtaskspb.Task)
	if view == cloudtaskspb.Task_FULL {
		out.View = cloudtaskspb.Task_FULL
		return out
	}
	out.View = cloudtaskspb.Task_BASIC
	if hr := out.GetHttpRequest(); hr != nil {
		hr.Body = nil
	}
	return out
}

// bodyAllowed reports whether an HTTP method may carry a body.
func bodyAllowed(m cloudtaskspb.HttpMethod) bool {
	return m == cloudtaskspb.HttpMethod_POST || m == cloudtaskspb.HttpMethod_PUT || m == cloudtaskspb.HttpMethod_PATCH
}

// prepareTaskLocked validates a CreateTask input for queue q and returns the
// task to store (name not yet assigned when in.Name is empty).
func (s *Server) prepareTaskLocked(q *queue, in *cloudtaskspb.Task, now time.Time) (*task, error) {
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "Task is required.")
	}
	pb := proto.Clone(in).(*cloudtaskspb.Task)
	var hr *cloudtaskspb.HttpRequest
	switch m := pb.MessageType.(type) {
	case *cloudtaskspb.Task_AppEngineHttpRequest:
		return nil, status.Error(codes.Unimplemented, "App Engine tasks are not supported by the Cloud Tasks emulator; use http_request.")
	case *cloudtaskspb.Task_HttpRequest:
		hr = m.HttpRequest
	}
	if hr == nil {
		return nil, status.Error(codes.InvalidArgument, "Task.httpRequest is required.")
	}

	if hr.HttpMethod == cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		hr.HttpMethod = cloudtaskspb.HttpMethod_POST
	}
	if _, ok := cloudtaskspb.HttpMethod_name[int32(hr.HttpMethod)]; !ok {
		return nil, status.Error(codes.InvalidArgument, "HttpRequest.httpMethod is invalid.")
	}
	lower := strings.ToLower(hr.Url)
	switch {
	case hr.Url == "" && q.pb.GetHttpTarget().GetUriOverride().GetHost() != "":
		// The queue-level URI override supplies the target.
	case hr.Url == "":
		return nil, status.Error(codes.InvalidArgument, "HttpRequest.url is required.")
	case !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://"):
		return nil, status.Error(codes.InvalidArgument, "HttpTarget.url must start with 'http://' or 'https://'.")
	case len(hr.Url) > maxURLLength:
		return nil, status.Errorf(codes.InvalidArgument, "HttpRequest.url must be at most %d characters.", maxURLLength)
	}
	if len(hr.Body) > 0 && !bodyAllowed(hr.HttpMethod) {
		return nil, status.Errorf(codes.InvalidArgument, "HttpRequest.body is allowed only for POST, PUT or PATCH, not %s.", hr.HttpMethod)
	}
	headers := map[string]string{}
	size := 0
	for k, v := range hr.Headers {
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return nil, status.Errorf(codes.InvalidArgument, "HttpRequest.headers contains an invalid header %q.", k)
		}
		size += len(k) + len(v)
		if strings.EqualFold(k, userAgentHeader) {
			continue
		}
		headers[k] = v
	}
	if size >= maxHeadersSize {
		return nil, status.Error(codes.InvalidArgument, "HttpRequest.headers must be smaller than 80KB.")
	}
	headers[userAgentHeader] = cloudTasksAgent
	hr.Headers = headers

	// schedule_time: default and lower bound now, at most 30 days ahead.
	at := now
	if st := pb.ScheduleTime; st != nil {
		if err := st.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Task.scheduleTime is invalid: %v.", err)
		}
		if t := st.AsTime(); t.After(now) {
			if t.Sub(now) > maxScheduleAhead {
				return nil, status.Error(codes.InvalidArgument, "Task.scheduleTime must be at most 30 days in the future.")
			}
			at = t
		}
	}

	// dispatch_deadline: default 10m, clamped to [min, 30m], millisecond precision.
	dl := DefaultDispatchDeadline
	if d := pb.DispatchDeadline; d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Task.dispatchDeadline is invalid: %v.", err)
		}
		if v := d.AsDuration(); v != 0 {
			dl = v
		}
	}
	dl = max(s.minDeadline, min(dl, MaxDispatchDeadline)).Truncate(time.Millisecond)
	pb.DispatchDeadline = durationpb.New(dl)

	if rc := pb.RetryConfig; rc != nil {
		if err := validateRetryConfig(rc); err != nil {
			return nil, err
		}
		eff := mergeRetryConfig(rc, q.pb.RetryConfig)
		if eff.MinBackoff.AsDuration() > eff.MaxBackoff.AsDuration() {
			return nil, status.Error(codes.InvalidArgument, "RetryConfig.minBackoff must be less than or equal to RetryConfig.maxBackoff.")
		}
	}

	pb.CreateTime = timestamppb.New(now.Truncate(time.Second))
	pb.DispatchCount, pb.ResponseCount = 0, 0
	pb.FirstAttempt, pb.LastAttempt = nil, nil
	pb.View = cloudtaskspb.Task_VIEW_UNSPECIFIED
	if n := proto.Size(pb); n > maxTaskSize {
		return nil, status.Errorf(codes.InvalidArgument, "Task size %d bytes exceeds the maximum of %d bytes.", n, maxTaskSize)
	}
	t := &task{pb: pb}
	t.setSchedule(at)
	return t, nil
}

// createTaskLocked implements CreateTask for an already validated parent.
func (s *Server) createTaskLocked(parent string, in *cloudtaskspb.Task, now time.Time) (*task, error) {
	q, ok := s.queues[parent]
	if !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	t, err := s.prepareTaskLocked(q, in, now)
	if err != nil {
		return nil, err
	}
	if t.pb.Name != "" {
		qn, _, err := parseTaskName(t.pb.Name)
		if err != nil {
			return nil, err
		}
		if qn != parent {
			return nil, status.Errorf(codes.InvalidArgument, "The queue name from request ('%s') must be the same as the queue name in the named task ('%s').", parent, qn)
		}
		if _, exists := q.tasks[t.pb.Name]; exists || s.tombstonedLocked(t.pb.Name, now) {
			return nil, status.Error(codes.AlreadyExists, msgTaskExists)
		}
	} else {
		for {
			name := parent + "/tasks/" + newTaskID()
			if _, exists := q.tasks[name]; !exists && !s.tombstonedLocked(name, now) {
				t.pb.Name = name
				break
			}
		}
	}
	q.tasks[t.pb.Name] = t
	q.kick()
	return t, nil
}

// newTaskID returns a random numeric ID like the ones the service generates.
func newTaskID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>1, 10)
}

// CreateTask adds req.Task to the queue req.Parent and returns it in
// req.ResponseView (BASIC, the default, omits the body). Only http_request
// tasks are supported (app_engine_http_request: Unimplemented). An empty
// task name gets a generated ID; schedule_time defaults to (and is raised
// to) now; dispatch_deadline defaults to 10m and is clamped to
// [Options.MinDispatchDeadline, 30m]. Errors: InvalidArgument (malformed
// names or fields, task larger than 100KB), NotFound (queue), AlreadyExists
// (a task with that name exists or existed within Options.TombstoneTTL).
func (s *Server) CreateTask(_ context.Context, req *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	if _, _, err := parseQueueName(req.GetParent()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweepLocked(now)
	t, err := s.createTaskLocked(req.GetParent(), req.GetTask(), now)
	if err != nil {
		return nil, err
	}
	return taskView(t, req.GetResponseView()), nil
}

// taskLocked resolves a task name to its queue and task. A task removed
// within the tombstone TTL yields NotFound with the service's "existed
// recently" message when tombMsg is set.
func (s *Server) taskLocked(name string, tombMsg bool) (*queue, *task, error) {
	qn, _, err := parseTaskName(name)
	if err != nil {
		return nil, nil, err
	}
	q, ok := s.queues[qn]
	if !ok {
		return nil, nil, status.Error(codes.NotFound, msgNotFound)
	}
	t, ok := q.tasks[name]
	if !ok {
		if tombMsg && s.tombstonedLocked(name, s.now()) {
			return nil, nil, status.Error(codes.NotFound, msgTaskTombstoned)
		}
		return nil, nil, status.Error(codes.NotFound, msgNotFound)
	}
	return q, t, nil
}

// GetTask returns the task named req.Name in req.ResponseView. Errors:
// InvalidArgument, NotFound (including tasks that completed, exhausted their
// retries or were deleted).
func (s *Server) GetTask(_ context.Context, req *cloudtaskspb.GetTaskRequest) (*cloudtaskspb.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, t, err := s.taskLocked(req.GetName(), true)
	if err != nil {
		return nil, err
	}
	return taskView(t, req.GetResponseView()), nil
}

// ListTasks lists the tasks of queue req.Parent ordered by schedule_time
// (then name), in req.ResponseView. req.PageSize ≤ 0 or > 1000 means 1000
// (negative is InvalidArgument); req.PageToken is the NextPageToken of a
// previous response. Errors: InvalidArgument, NotFound (queue).
func (s *Server) ListTasks(_ context.Context, req *cloudtaskspb.ListTasksRequest) (*cloudtaskspb.ListTasksResponse, error) {
	if _, _, err := parseQueueName(req.GetParent()); err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize(), maxTaskPageSize)
	if err != nil {
		return nil, err
	}
	var afterAt int64
	afterName := ""
	if tok := req.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		at, name, ok := strings.Cut(string(b), "|")
		n, perr := strconv.ParseInt(at, 10, 64)
		if err != nil || !ok || perr != nil {
			return nil, status.Error(codes.InvalidArgument, "Invalid page token.")
		}
		afterAt, afterName = n, name
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[req.GetParent()]
	if !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	ts := sortedTasks(q)
	resp := &cloudtaskspb.ListTasksResponse{}
	for _, t := range ts {
		at := t.schedule.UnixNano()
		if req.GetPageToken() != "" && (at < afterAt || (at == afterAt && t.pb.Name <= afterName)) {
			continue
		}
		if len(resp.Tasks) == size {
			last := resp.Tasks[size-1]
			key := fmt.Sprintf("%d|%s", last.ScheduleTime.AsTime().UnixNano(), last.Name)
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(key))
			break
		}
		resp.Tasks = append(resp.Tasks, taskView(t, req.GetResponseView()))
	}
	return resp, nil
}

// sortedTasks returns q's tasks ordered by schedule time, then name.
func sortedTasks(q *queue) []*task {
	ts := make([]*task, 0, len(q.tasks))
	for _, t := range q.tasks {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool {
		if !ts[i].schedule.Equal(ts[j].schedule) {
			return ts[i].schedule.Before(ts[j].schedule)
		}
		return ts[i].pb.Name < ts[j].pb.Name
	})
	return ts
}

// DeleteTask deletes the task named req.Name, whether scheduled or being
// dispatched (an attempt in flight finishes but its outcome is discarded).
// The name stays reserved for Options.TombstoneTTL. Errors:
// InvalidArgument, NotFound.
func (s *Server) DeleteTask(_ context.Context, req *cloudtaskspb.DeleteTaskRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, t, err := s.taskLocked(req.GetName(), false)
	if err != nil {
		return nil, err
	}
	s.removeTaskLocked(q, t, s.now())
	return &emptypb.Empty{}, nil
}

// removeTaskLocked deletes t from q and tombstones its name.
func (s *Server) removeTaskLocked(q *queue, t *task, now time.Time) {
	delete(q.tasks, t.pb.Name)
	s.tombstoneLocked(t.pb.Name, now)
}

// RunTask dispatches the task named req.Name now, even if it is scheduled
// later, already running, the queue is PAUSED or its rate limits are
// reached. It returns the task as dispatched (dispatch_count and
// last_attempt updated) in req.ResponseView. On success the task is deleted;
// on failure its schedule_time becomes the RunTask time plus the retry
// backoff. Errors: InvalidArgument, NotFound, Unavailable (Server stopped).
func (s *Server) RunTask(_ context.Context, req *cloudtaskspb.RunTaskRequest) (*cloudtaskspb.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, t, err := s.taskLocked(req.GetName(), false)
	if err != nil {
		return nil, err
	}
	if s.stopped {
		return nil, status.Error(codes.Unavailable, "The Cloud Tasks emulator is shutting down.")
	}
	s.startAttemptLocked(q, t, s.now(), true)
	return taskView(t, req.GetResponseView()), nil
}
