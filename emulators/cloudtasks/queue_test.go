package cloudtasks

import (
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	name := testLoc + "/queues/lifecycle"

	q, err := e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLoc, Queue: &cloudtaskspb.Queue{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	// Documented defaults.
	if q.State != cloudtaskspb.Queue_RUNNING {
		t.Errorf("state = %v, want RUNNING", q.State)
	}
	rl, rc := q.GetRateLimits(), q.GetRetryConfig()
	if rl.GetMaxDispatchesPerSecond() != 500 || rl.GetMaxConcurrentDispatches() != 1000 || rl.GetMaxBurstSize() <= 0 {
		t.Errorf("rate limits = %v, want 500/s, 1000 concurrent, positive burst", rl)
	}
	if rc.GetMaxAttempts() != 100 || rc.GetMinBackoff().AsDuration() != 100*time.Millisecond ||
		rc.GetMaxBackoff().AsDuration() != time.Hour || rc.GetMaxDoublings() != 16 {
		t.Errorf("retry config = %v, want 100 attempts, 0.1s..3600s, 16 doublings", rc)
	}

	_, err = e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLoc, Queue: &cloudtaskspb.Queue{Name: name}})
	wantCode(t, err, codes.AlreadyExists, "duplicate CreateQueue")

	got, err := e.c.GetQueue(e.ctx, &cloudtaskspb.GetQueueRequest{Name: name})
	if err != nil || !proto.Equal(got, q) {
		t.Fatalf("GetQueue = %v, %v; want %v", got, err, q)
	}

	// Masked update touches only the named field.
	upd, err := e.c.UpdateQueue(e.ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue:      &cloudtaskspb.Queue{Name: name, RateLimits: &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 7, MaxDispatchesPerSecond: 1}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits.max_concurrent_dispatches"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if upd.RateLimits.MaxConcurrentDispatches != 7 || upd.RateLimits.MaxDispatchesPerSecond != rl.MaxDispatchesPerSecond {
		t.Errorf("after masked update rate limits = %v", upd.RateLimits)
	}
	if !proto.Equal(upd.RetryConfig, rc) {
		t.Errorf("masked update changed retry config: %v", upd.RetryConfig)
	}
	upd, err = e.c.UpdateQueue(e.ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue:      &cloudtaskspb.Queue{Name: name, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 5}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"retry_config"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if upd.RetryConfig.MaxAttempts != 5 || upd.RetryConfig.MinBackoff.AsDuration() != rc.MinBackoff.AsDuration() {
		t.Errorf("retry_config update = %v", upd.RetryConfig)
	}
	if upd.RateLimits.MaxConcurrentDispatches != 7 {
		t.Errorf("retry_config update changed rate limits: %v", upd.RateLimits)
	}
	_, err = e.c.UpdateQueue(e.ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue:      &cloudtaskspb.Queue{Name: name, State: cloudtaskspb.Queue_PAUSED},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"state"}},
	})
	wantCode(t, err, codes.InvalidArgument, "UpdateQueue(state)")

	// UpdateQueue creates a missing queue.
	other := testLoc + "/queues/lifecycle-upsert"
	if _, err := e.c.UpdateQueue(e.ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: other}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.GetQueue(e.ctx, &cloudtaskspb.GetQueueRequest{Name: other}); err != nil {
		t.Fatalf("queue created by UpdateQueue: %v", err)
	}

	// Pause / resume and the state filter.
	p, err := e.c.PauseQueue(e.ctx, &cloudtaskspb.PauseQueueRequest{Name: name})
	if err != nil || p.State != cloudtaskspb.Queue_PAUSED {
		t.Fatalf("PauseQueue = %v, %v", p, err)
	}
	it := e.c.ListQueues(e.ctx, &cloudtaskspb.ListQueuesRequest{Parent: testLoc, Filter: "state: PAUSED"})
	var paused []string
	for {
		q, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		paused = append(paused, q.Name)
	}
	if len(paused) != 1 || paused[0] != name {
		t.Errorf("paused queues = %v, want [%s]", paused, name)
	}
	r, err := e.c.ResumeQueue(e.ctx, &cloudtaskspb.ResumeQueueRequest{Name: name})
	if err != nil || r.State != cloudtaskspb.Queue_RUNNING {
		t.Fatalf("ResumeQueue = %v, %v", r, err)
	}

	// Delete.
	if err := e.c.DeleteQueue(e.ctx, &cloudtaskspb.DeleteQueueRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.GetQueue(e.ctx, &cloudtaskspb.GetQueueRequest{Name: name})
	wantCode(t, err, codes.NotFound, "GetQueue after delete")
	err = e.c.DeleteQueue(e.ctx, &cloudtaskspb.DeleteQueueRequest{Name: name})
	wantCode(t, err, codes.NotFound, "second DeleteQueue")
	if _, err := e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLoc, Queue: &cloudtaskspb.Queue{Name: name}}); err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
}

func TestQueueErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{QueueTombstoneTTL: time.Hour})
	create := func(q *cloudtaskspb.Queue) error {
		_, err := e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLoc, Queue: q})
		return err
	}
	qn := func(id string) string { return testLoc + "/queues/" + id }

	_, err := e.c.GetQueue(e.ctx, &cloudtaskspb.GetQueueRequest{Name: "queues/bad"})
	wantCode(t, err, codes.InvalidArgument, "GetQueue(malformed)")
	_, err = e.c.GetQueue(e.ctx, &cloudtaskspb.GetQueueRequest{Name: qn("missing")})
	wantCode(t, err, codes.NotFound, "GetQueue(missing)")
	_, err = e.c.PauseQueue(e.ctx, &cloudtaskspb.PauseQueueRequest{Name: qn("missing")})
	wantCode(t, err, codes.NotFound, "PauseQueue(missing)")
	_, err = e.c.PurgeQueue(e.ctx, &cloudtaskspb.PurgeQueueRequest{Name: qn("missing")})
	wantCode(t, err, codes.NotFound, "PurgeQueue(missing)")

	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("bad_id")}), codes.InvalidArgument, "queue ID with underscore")
	wantCode(t, create(&cloudtaskspb.Queue{Name: "projects/other/locations/us-central1/queues/x"}), codes.InvalidArgument, "queue outside parent")
	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("rate"), RateLimits: &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 501}}), codes.InvalidArgument, "rate > 500")
	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("conc"), RateLimits: &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 5001}}), codes.InvalidArgument, "concurrency > 5000")
	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("att"), RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: -2}}), codes.InvalidArgument, "max_attempts < -1")
	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("backoff"), RetryConfig: &cloudtaskspb.RetryConfig{
		MinBackoff: durationpb.New(10 * time.Second), MaxBackoff: durationpb.New(time.Second)}}), codes.InvalidArgument, "min_backoff > max_backoff")
	_, err = e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{Parent: "projects/x", Queue: &cloudtaskspb.Queue{Name: qn("p")}})
	wantCode(t, err, codes.InvalidArgument, "malformed parent")
	it := e.c.ListQueues(e.ctx, &cloudtaskspb.ListQueuesRequest{Parent: "nope"})
	_, err = it.Next()
	wantCode(t, err, codes.InvalidArgument, "ListQueues(malformed parent)")

	// With QueueTombstoneTTL a deleted name cannot be reused at once.
	if err := create(&cloudtaskspb.Queue{Name: qn("tomb")}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.DeleteQueue(e.ctx, &cloudtaskspb.DeleteQueueRequest{Name: qn("tomb")}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, create(&cloudtaskspb.Queue{Name: qn("tomb")}), codes.FailedPrecondition, "re-create within queue tombstone")
}

func TestListQueuesPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	parent := "projects/test-project/locations/europe-west1"
	want := []string{"a", "b", "c", "d", "e"}
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		if _, err := e.c.CreateQueue(e.ctx, &cloudtaskspb.CreateQueueRequest{
			Parent: parent, Queue: &cloudtaskspb.Queue{Name: parent + "/queues/" + id}}); err != nil {
			t.Fatal(err)
		}
	}
	e.queue("elsewhere", nil) // another location must not be listed

	it := e.c.ListQueues(e.ctx, &cloudtaskspb.ListQueuesRequest{Parent: parent})
	pager := iterator.NewPager(it, 2, "")
	var got []string
	pages := 0
	for {
		var page []*cloudtaskspb.Queue
		next, err := pager.NextPage(&page)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > 2 {
			t.Fatalf("page of %d queues with page_size 2", len(page))
		}
		for _, q := range page {
			got = append(got, shortName(q.Name))
		}
		if next == "" {
			break
		}
	}
	if pages < 3 {
		t.Errorf("got %d pages for 5 queues of page_size 2", pages)
	}
	if len(got) != len(want) {
		t.Fatalf("queues = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("queues = %v, want lexicographic %v", got, want)
		}
	}
}

func TestIAMAndCmek(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	q := e.queue("iam", nil)
	pol, err := e.c.SetIamPolicy(e.ctx, &iampb.SetIamPolicyRequest{Resource: q.Name, Policy: &iampb.Policy{
		Bindings: []*iampb.Binding{{Role: "roles/cloudtasks.enqueuer", Members: []string{"user:a@example.com"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.c.GetIamPolicy(e.ctx, &iampb.GetIamPolicyRequest{Resource: q.Name})
	if err != nil || !proto.Equal(got, pol) || len(got.Bindings) != 1 {
		t.Fatalf("GetIamPolicy = %v, %v; want %v", got, err, pol)
	}
	perms := []string{"cloudtasks.tasks.create", "cloudtasks.tasks.fullView"}
	tp, err := e.c.TestIamPermissions(e.ctx, &iampb.TestIamPermissionsRequest{Resource: q.Name, Permissions: perms})
	if err != nil || len(tp.Permissions) != len(perms) {
		t.Fatalf("TestIamPermissions = %v, %v", tp, err)
	}
	_, err = e.c.GetIamPolicy(e.ctx, &iampb.GetIamPolicyRequest{Resource: testLoc + "/queues/none"})
	wantCode(t, err, codes.NotFound, "GetIamPolicy(missing queue)")

	key := "projects/test-project/locations/us-central1/keyRings/r/cryptoKeys/k"
	cfg, err := e.c.UpdateCmekConfig(e.ctx, &cloudtaskspb.UpdateCmekConfigRequest{
		CmekConfig: &cloudtaskspb.CmekConfig{Name: testLoc + "/cmekConfig", KmsKey: key}})
	if err != nil || cfg.KmsKey != key {
		t.Fatalf("UpdateCmekConfig = %v, %v", cfg, err)
	}
	cfg, err = e.c.GetCmekConfig(e.ctx, &cloudtaskspb.GetCmekConfigRequest{Name: testLoc + "/cmekConfig"})
	if err != nil || cfg.KmsKey != key {
		t.Fatalf("GetCmekConfig = %v, %v", cfg, err)
	}
}
