package cloudtasks

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
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
	parent, n := req.GetParent(), len(req.GetRequests())
	resp := &cloudtaskspb.BatchCreateTasksResponse{}
	return s.runBatch(batch{kind: "create", parent: parent, requestID: req.GetRequestId(), n: n, max: maxBatchCreate,
		sizeMsg: fmt.Sprintf("BatchCreateTasksRequest.requests must contain between 1 and %d requests.", maxBatchCreate),
		check: func() error {
			for _, r := range req.GetRequests() {
				if r.GetParent() != "" && r.GetParent() != parent {
					return status.Errorf(codes.InvalidArgument, "All requests must be for queue %q, got %q.", parent, r.GetParent())
				}
			}
			return nil
		},
		item: func(i int, now time.Time) error {
			r := req.GetRequests()[i]
			t, err := s.createTaskLocked(parent, r.GetTask(), now)
			if err == nil {
				resp.Tasks = append(resp.Tasks, taskView(t, r.GetResponseView()))
			}
			return err
		},
		done: func(start, end *timestamppb.Timestamp, failed map[int32]*spb.Status) (md, out proto.Message) {
			return &cloudtaskspb.BatchCreateTasksMetadata{StartTime: start, EndTime: end, FailedRequests: failed,
				State: batchState(n, len(failed), cloudtaskspb.BatchCreateTasksMetadata_SUCCEEDED,
					cloudtaskspb.BatchCreateTasksMetadata_PARTIALLY_SUCCEEDED, cloudtaskspb.BatchCreateTasksMetadata_FAILED)}, resp
		}})
}

// BatchDeleteTasks deletes up to 1000 tasks of queue req.Parent, as
// DeleteTask would, and returns an already finished operation (response
// google.protobuf.Empty, metadata BatchDeleteTasksMetadata mapping the index
// of every failed name to its status). A repeated req.RequestId returns the
// earlier operation. Errors (whole batch): InvalidArgument, NotFound (queue).
func (s *Server) BatchDeleteTasks(_ context.Context, req *cloudtaskspb.BatchDeleteTasksRequest) (*longrunningpb.Operation, error) {
	parent, n := req.GetParent(), len(req.GetNames())
	return s.runBatch(batch{kind: "delete", parent: parent, requestID: req.GetRequestId(), n: n, max: maxBatchDeleteLen,
		sizeMsg: fmt.Sprintf("BatchDeleteTasksRequest.names must contain between 1 and %d names.", maxBatchDeleteLen),
		item: func(i int, now time.Time) error {
			name := req.GetNames()[i]
			qn, _, err := parseTaskName(name)
			if err != nil {
				return err
			}
			if qn != parent {
				return status.Errorf(codes.InvalidArgument, "Task %q is not in queue %q.", name, parent)
			}
			q, t, err := s.taskLocked(name, false)
			if err != nil {
				return err
			}
			s.removeTaskLocked(q, t, now)
			return nil
		},
		done: func(start, end *timestamppb.Timestamp, failed map[int32]*spb.Status) (md, resp proto.Message) {
			return &cloudtaskspb.BatchDeleteTasksMetadata{StartTime: start, EndTime: end, FailedRequests: failed,
				State: batchState(n, len(failed), cloudtaskspb.BatchDeleteTasksMetadata_SUCCEEDED,
					cloudtaskspb.BatchDeleteTasksMetadata_PARTIALLY_SUCCEEDED, cloudtaskspb.BatchDeleteTasksMetadata_FAILED)}, &emptypb.Empty{}
		}})
}

// batch is one BatchCreateTasks or BatchDeleteTasks request, for runBatch.
type batch struct {
	kind, parent, requestID string                           // kind: "create" | "delete" (keys the request_id dedup)
	n, max                  int                              // the items in the request; at most max are allowed
	sizeMsg                 string                           // the InvalidArgument message for no or over max items
	check                   func() error                     // more whole-batch checks before the lock (nil: none)
	item                    func(i int, now time.Time) error // applies item i under the lock; an error fails that item alone
	done                    func(start, end *timestamppb.Timestamp, failed map[int32]*spb.Status) (md, resp proto.Message)
}

// runBatch runs b: it checks the parent and the batch size, then (under
// the lock) the queue, answers a repeated request ID with the earlier
// operation, applies every item, and returns the finished operation b.done
// describes (failed maps the index of each failed item to its status; nil
// when none failed), remembered under its request ID. Errors (whole batch):
// InvalidArgument, NotFound (queue), or b.check's.
func (s *Server) runBatch(b batch) (*longrunningpb.Operation, error) {
	loc, _, err := parseQueueName(b.parent)
	if err != nil {
		return nil, err
	}
	if b.n == 0 || b.n > b.max {
		return nil, status.Error(codes.InvalidArgument, b.sizeMsg)
	}
	if b.check != nil {
		if err := b.check(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[b.parent]; !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	now := s.now()
	s.sweepLocked(now)
	key := b.kind + "|" + b.parent + "|" + b.requestID
	if prev, ok := s.ops[key]; ok && b.requestID != "" {
		return proto.Clone(prev.op).(*longrunningpb.Operation), nil
	}
	var failed map[int32]*spb.Status
	for i := range b.n {
		if err := b.item(i, now); err != nil {
			if failed == nil {
				failed = map[int32]*spb.Status{}
			}
			failed[int32(i)] = status.Convert(err).Proto()
		}
	}
	md, resp := b.done(timestamppb.New(now), timestamppb.New(s.now()), failed)
	op, err := finishedOp(loc, b.requestID, md, resp)
	if err != nil {
		return nil, err
	}
	if b.requestID != "" {
		s.ops[key] = storedOp{op: op, at: now}
	}
	return proto.Clone(op).(*longrunningpb.Operation), nil
}

// batchState is a finished batch's State: succeeded when none of its n
// items failed, failed when all did, else partial.
func batchState[S ~int32](n, failed int, succeeded, partial, allFailed S) S {
	switch failed {
	case 0:
		return succeeded
	case n:
		return allFailed
	}
	return partial
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
