package cloudtasks

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// storedOp remembers a finished batch operation for request_id dedup.
type storedOp struct {
	op *longrunningpb.Operation
	at time.Time
}

// GetIamPolicy returns the IAM policy stored on the queue named
// req.Resource (an empty policy if none was set). The emulator does not
// enforce IAM. Errors: InvalidArgument, NotFound.
func (s *Server) GetIamPolicy(_ context.Context, req *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(req.GetResource())
	if err != nil {
		return nil, err
	}
	if q.policy == nil {
		q.policy = &iampb.Policy{Etag: s.nextEtagLocked()}
	}
	return proto.Clone(q.policy).(*iampb.Policy), nil
}

// SetIamPolicy replaces the IAM policy of the queue named req.Resource and
// returns it with a fresh etag. A non-empty req.Policy.Etag must match the
// current one (Aborted otherwise). Errors: InvalidArgument, NotFound,
// Aborted.
func (s *Server) SetIamPolicy(_ context.Context, req *iampb.SetIamPolicyRequest) (*iampb.Policy, error) {
	if req.GetPolicy() == nil {
		return nil, status.Error(codes.InvalidArgument, "Policy is required.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(req.GetResource())
	if err != nil {
		return nil, err
	}
	if e := req.GetPolicy().GetEtag(); len(e) > 0 && q.policy != nil && string(e) != string(q.policy.Etag) {
		return nil, status.Error(codes.Aborted, "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.")
	}
	p := proto.Clone(req.GetPolicy()).(*iampb.Policy)
	p.Etag = s.nextEtagLocked()
	q.policy = p
	return proto.Clone(p).(*iampb.Policy), nil
}

func (s *Server) nextEtagLocked() []byte {
	s.etagSeq++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.etagSeq)
	return b[:]
}

// TestIamPermissions grants every requested permission on an existing
// queue (the emulator has no authorization) and none on a missing one.
func (s *Server) TestIamPermissions(_ context.Context, req *iampb.TestIamPermissionsRequest) (*iampb.TestIamPermissionsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queueLocked(req.GetResource()); err != nil {
		if status.Code(err) == codes.NotFound {
			return &iampb.TestIamPermissionsResponse{}, nil
		}
		return nil, err
	}
	return &iampb.TestIamPermissionsResponse{Permissions: append([]string(nil), req.GetPermissions()...)}, nil
}

var kmsKeyRe = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// GetCmekConfig returns the CMEK configuration named req.Name
// (projects/P/locations/L/cmekConfig); an empty kms_key if never set. The
// key is recorded only: nothing is encrypted. Errors: InvalidArgument.
func (s *Server) GetCmekConfig(_ context.Context, req *cloudtaskspb.GetCmekConfigRequest) (*cloudtaskspb.CmekConfig, error) {
	m := cmekRe.FindStringSubmatch(req.GetName())
	if m == nil {
		return nil, status.Error(codes.InvalidArgument, `CmekConfig name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/cmekConfig".`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cmek[m[1]]; ok {
		return proto.Clone(c).(*cloudtaskspb.CmekConfig), nil
	}
	return &cloudtaskspb.CmekConfig{Name: m[1] + "/cmekConfig"}, nil
}

// UpdateCmekConfig records req.CmekConfig.KmsKey (empty turns CMEK off) for
// the location in req.CmekConfig.Name. Errors: InvalidArgument.
func (s *Server) UpdateCmekConfig(_ context.Context, req *cloudtaskspb.UpdateCmekConfigRequest) (*cloudtaskspb.CmekConfig, error) {
	c := req.GetCmekConfig()
	if c == nil {
		return nil, status.Error(codes.InvalidArgument, "CmekConfig is required.")
	}
	m := cmekRe.FindStringSubmatch(c.GetName())
	if m == nil {
		return nil, status.Error(codes.InvalidArgument, `CmekConfig name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/cmekConfig".`)
	}
	if c.KmsKey != "" && !kmsKeyRe.MatchString(c.KmsKey) {
		return nil, status.Error(codes.InvalidArgument, `kms_key must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/keyRings/<KEY_RING_ID>/cryptoKeys/<KEY_ID>".`)
	}
	out := &cloudtaskspb.CmekConfig{Name: m[1] + "/cmekConfig", KmsKey: c.KmsKey}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmek[m[1]] = out
	return proto.Clone(out).(*cloudtaskspb.CmekConfig), nil
}

// BatchCreateTasks creates up to 100 tasks in queue req.Parent, each as
// CreateTask would, and returns an already finished operation whose response
// is a BatchCreateTasksResponse (the tasks created) and whose metadata
// (BatchCreateTasksMetadata) maps the index of every failed request to its
// status. A repeated req.RequestId returns the earlier operation. Errors
// (whole batch): InvalidArgument (malformed parent, no or more than 100
// requests, a request for another queue), NotFound (queue).
func (s *Server) BatchCreateTasks(_ context.Context, req *cloudtaskspb.BatchCreateTasksRequest) (*longrunningpb.Operation, error) {
	parent := req.GetParent()
	loc, _, err := parseQueueName(parent)
	if err != nil {
		return nil, err
	}
	n := len(req.GetRequests())
	if n == 0 || n > maxBatchCreate {
		return nil, status.Errorf(codes.InvalidArgument, "BatchCreateTasksRequest.requests must contain between 1 and %d requests.", maxBatchCreate)
	}
	for _, r := range req.GetRequests() {
		if r.GetParent() != "" && r.GetParent() != parent {
			return nil, status.Errorf(codes.InvalidArgument, "All requests must be for queue %q, got %q.", parent, r.GetParent())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[parent]; !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	now := s.now()
	s.sweepLocked(now)
	key := "create|" + parent + "|" + req.GetRequestId()
	if prev, ok := s.ops[key]; ok && req.GetRequestId() != "" {
		return proto.Clone(prev.op).(*longrunningpb.Operation), nil
	}
	md := &cloudtaskspb.BatchCreateTasksMetadata{StartTime: timestamppb.New(now)}
	resp := &cloudtaskspb.BatchCreateTasksResponse{}
	for i, r := range req.GetRequests() {
		t, err := s.createTaskLocked(parent, r.GetTask(), now)
		if err != nil {
			if md.FailedRequests == nil {
				md.FailedRequests = map[int32]*spb.Status{}
			}
			md.FailedRequests[int32(i)] = status.Convert(err).Proto()
			continue
		}
		resp.Tasks = append(resp.Tasks, taskView(t, r.GetResponseView()))
	}
	md.EndTime = timestamppb.New(s.now())
	switch len(md.FailedRequests) {
	case 0:
		md.State = cloudtaskspb.BatchCreateTasksMetadata_SUCCEEDED
	case n:
		md.State = cloudtaskspb.BatchCreateTasksMetadata_FAILED
	default:
		md.State = cloudtaskspb.BatchCreateTasksMetadata_PARTIALLY_SUCCEEDED
	}
	op, err := finishedOp(loc, req.GetRequestId(), md, resp)
	if err != nil {
		return nil, err
	}
	if req.GetRequestId() != "" {
		s.ops[key] = storedOp{op: op, at: now}
	}
	return proto.Clone(op).(*longrunningpb.Operation), nil
}

// BatchDeleteTasks deletes up to 1000 tasks of queue req.Parent, as
// DeleteTask would, and returns an already finished operation (response
// google.protobuf.Empty, metadata BatchDeleteTasksMetadata mapping the index
// of every failed name to its status). A repeated req.RequestId returns the
// earlier operation. Errors (whole batch): InvalidArgument, NotFound (queue).
func (s *Server) BatchDeleteTasks(_ context.Context, req *cloudtaskspb.BatchDeleteTasksRequest) (*longrunningpb.Operation, error) {
	parent := req.GetParent()
	loc, _, err := parseQueueName(parent)
	if err != nil {
		return nil, err
	}
	n := len(req.GetNames())
	if n == 0 || n > maxBatchDeleteLen {
		return nil, status.Errorf(codes.InvalidArgument, "BatchDeleteTasksRequest.names must contain between 1 and %d names.", maxBatchDeleteLen)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[parent]; !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	now := s.now()
	s.sweepLocked(now)
	key := "delete|" + parent + "|" + req.GetRequestId()
	if prev, ok := s.ops[key]; ok && req.GetRequestId() != "" {
		return proto.Clone(prev.op).(*longrunningpb.Operation), nil
	}
	md := &cloudtaskspb.BatchDeleteTasksMetadata{StartTime: timestamppb.New(now)}
	fail := func(i int, err error) {
		if md.FailedRequests == nil {
			md.FailedRequests = map[int32]*spb.Status{}
		}
		md.FailedRequests[int32(i)] = status.Convert(err).Proto()
	}
	for i, name := range req.GetNames() {
		qn, _, err := parseTaskName(name)
		if err != nil {
			fail(i, err)
			continue
		}
		if qn != parent {
			fail(i, status.Errorf(codes.InvalidArgument, "Task %q is not in queue %q.", name, parent))
			continue
		}
		q, t, err := s.taskLocked(name, false)
		if err != nil {
			fail(i, err)
			continue
		}
		s.removeTaskLocked(q, t, now)
	}
	md.EndTime = timestamppb.New(s.now())
	switch len(md.FailedRequests) {
	case 0:
		md.State = cloudtaskspb.BatchDeleteTasksMetadata_SUCCEEDED
	case n:
		md.State = cloudtaskspb.BatchDeleteTasksMetadata_FAILED
	default:
		md.State = cloudtaskspb.BatchDeleteTasksMetadata_PARTIALLY_SUCCEEDED
	}
	op, err := finishedOp(loc, req.GetRequestId(), md, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}
	if req.GetRequestId() != "" {
		s.ops[key] = storedOp{op: op, at: now}
	}
	return proto.Clone(op).(*longrunningpb.Operation), nil
}

// finishedOp builds a done Operation named loc/operations/ID.
func finishedOp(loc, id string, md, resp proto.Message) (*longrunningpb.Operation, error) {
	if id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	mdAny, err := anypb.New(md)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "marshal metadata: %v", err)
	}
	respAny, err := anypb.New(resp)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "marshal response: %v", err)
	}
	return &longrunningpb.Operation{
		Name:     loc + "/operations/" + id,
		Metadata: mdAny,
		Done:     true,
		Result:   &longrunningpb.Operation_Response{Response: respAny},
	}, nil
}
