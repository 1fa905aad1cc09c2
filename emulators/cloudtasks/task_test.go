package cloudtasks

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestCreateTaskDedup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.pausedQueue("dedup", nil)
	name := q.Name + "/tasks/dup-1"

	got := e.createTask(q.Name, httpTask(name, tg.URL))
	if got.Name != name {
		t.Fatalf("created task name = %q, want %q", got.Name, name)
	}
	_, err := e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(name, tg.URL)})
	wantCode(t, err, codes.AlreadyExists, "CreateTask(existing name)")

	// A deleted name stays reserved.
	if err := e.c.DeleteTask(e.ctx, &cloudtaskspb.DeleteTaskRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(name, tg.URL)})
	wantCode(t, err, codes.AlreadyExists, "CreateTask(deleted name)")

	// So does the name of a task that completed.
	done := q.Name + "/tasks/dup-2"
	e.createTask(q.Name, httpTask(done, tg.URL))
	if _, err := e.c.ResumeQueue(e.ctx, &cloudtaskspb.ResumeQueueRequest{Name: q.Name}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "completed task to disappear", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: done})
		return err != nil
	})
	_, err = e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: done})
	wantCode(t, err, codes.NotFound, "GetTask(completed)")
	if tg.count() != 1 {
		t.Fatalf("target got %d requests, want 1", tg.count())
	}
	_, err = e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(done, tg.URL)})
	wantCode(t, err, codes.AlreadyExists, "CreateTask(completed name)")

	// Unnamed tasks get distinct generated names in the queue.
	a := e.createTask(q.Name, httpTask("", tg.URL))
	b := e.createTask(q.Name, httpTask("", tg.URL))
	if a.Name == b.Name {
		t.Errorf("generated names collide: %q", a.Name)
	}
	for _, n := range []string{a.Name, b.Name} {
		if qn, _, err := parseTaskName(n); err != nil || qn != q.Name {
			t.Errorf("generated name %q not a task of %q (%v)", n, q.Name, err)
		}
	}
}

func TestTombstoneTTLWithClock(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := newEnv(t, Options{Clock: clk.Now, TombstoneTTL: time.Hour})
	tg := newTarget(t, statusSeq(http.StatusOK))
	q := e.queue("clock", nil)
	name := q.Name + "/tasks/ttl"

	// Scheduled an hour ahead on the fake clock: not due until it advances.
	task := httpTask(name, tg.URL)
	task.ScheduleTime = timestamppb.New(clk.Now().Add(time.Hour))
	created := e.createTask(q.Name, task)
	if !created.ScheduleTime.AsTime().Equal(clk.Now().Add(time.Hour)) || !created.CreateTime.AsTime().Equal(clk.Now()) {
		t.Fatalf("times not taken from the injected clock: schedule %v create %v", created.ScheduleTime.AsTime(), created.CreateTime.AsTime())
	}
	time.Sleep(150 * time.Millisecond)
	if n := tg.count(); n != 0 {
		t.Fatalf("task dispatched before its (fake) schedule time: %d requests", n)
	}
	clk.Advance(time.Hour)
	waitFor(t, 10*time.Second, "dispatch after advancing the clock", func() bool { return tg.count() == 1 })
	waitFor(t, 10*time.Second, "task completion", func() bool {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: name})
		return err != nil
	})

	_, err := e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(name, tg.URL)})
	wantCode(t, err, codes.AlreadyExists, "CreateTask within tombstone TTL")
	clk.Advance(time.Hour + time.Second)
	if _, err := e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(name, tg.URL)}); err != nil {
		t.Fatalf("CreateTask after tombstone TTL: %v", err)
	}
}

func TestTaskValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	q := e.pausedQueue("validate", nil)
	create := func(task *cloudtaskspb.Task) (*cloudtaskspb.Task, error) {
		return e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: task})
	}
	url := "http://127.0.0.1:1/never"

	_, err := create(&cloudtaskspb.Task{MessageType: &cloudtaskspb.Task_AppEngineHttpRequest{
		AppEngineHttpRequest: &cloudtaskspb.AppEngineHttpRequest{RelativeUri: "/x"}}})
	wantCode(t, err, codes.Unimplemented, "App Engine task")
	_, err = create(&cloudtaskspb.Task{})
	wantCode(t, err, codes.InvalidArgument, "task without request")
	_, err = create(httpTask("", ""))
	wantCode(t, err, codes.InvalidArgument, "empty url")
	_, err = create(httpTask("", "ftp://example.com/x"))
	wantCode(t, err, codes.InvalidArgument, "non-http url")
	get := httpTask("", url)
	get.GetHttpRequest().HttpMethod = cloudtaskspb.HttpMethod_GET
	get.GetHttpRequest().Body = []byte("x")
	_, err = create(get)
	wantCode(t, err, codes.InvalidArgument, "GET with body")
	_, err = create(httpTask(testLoc+"/queues/other/tasks/t1", url))
	wantCode(t, err, codes.InvalidArgument, "task named in another queue")
	_, err = create(httpTask(q.Name+"/tasks/bad id", url))
	wantCode(t, err, codes.InvalidArgument, "invalid task ID")
	far := httpTask("", url)
	far.ScheduleTime = timestamppb.New(time.Now().Add(40 * 24 * time.Hour))
	_, err = create(far)
	wantCode(t, err, codes.InvalidArgument, "schedule_time 40 days ahead")
	big := httpTask("", url)
	big.GetHttpRequest().Body = bytes.Repeat([]byte("x"), 101*1024)
	_, err = create(big)
	wantCode(t, err, codes.InvalidArgument, "task over 100KB")
	_, err = e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: testLoc + "/queues/missing", Task: httpTask("", url)})
	wantCode(t, err, codes.NotFound, "CreateTask(missing queue)")
	_, err = e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: "tasks/x"})
	wantCode(t, err, codes.InvalidArgument, "GetTask(malformed)")

	// Defaults and clamping of dispatch_deadline, POST default method,
	// schedule_time in the past raised to now.
	before := time.Now().Truncate(time.Microsecond)
	for _, tc := range []struct {
		in, want time.Duration
	}{
		{0, DefaultDispatchDeadline},
		{time.Second, DefaultMinDispatchDeadline},
		{time.Hour, MaxDispatchDeadline},
		{time.Minute, time.Minute},
	} {
		task := httpTask("", url)
		if tc.in != 0 {
			task.DispatchDeadline = durationpb.New(tc.in)
		}
		task.ScheduleTime = timestamppb.New(time.Now().Add(-time.Hour))
		got, err := create(task)
		if err != nil {
			t.Fatal(err)
		}
		if d := got.DispatchDeadline.AsDuration(); d != tc.want {
			t.Errorf("dispatch_deadline %v stored as %v, want %v", tc.in, d, tc.want)
		}
		if got.GetHttpRequest().HttpMethod != cloudtaskspb.HttpMethod_POST {
			t.Errorf("default method = %v, want POST", got.GetHttpRequest().HttpMethod)
		}
		if got.ScheduleTime.AsTime().Before(before) {
			t.Errorf("past schedule_time kept as %v (created after %v)", got.ScheduleTime.AsTime(), before)
		}
		if got.CreateTime == nil || got.DispatchCount != 0 || got.View != cloudtaskspb.Task_BASIC {
			t.Errorf("unexpected new task bookkeeping: %v", got)
		}
	}
}

func TestGetListDeleteTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	q := e.pausedQueue("list", nil)
	now := time.Now()
	offsets := []time.Duration{5 * time.Minute, time.Minute, 3 * time.Minute, 2 * time.Minute, 4 * time.Minute}
	var names []string
	for i, off := range offsets {
		task := httpTask("", "http://127.0.0.1:1/x")
		task.ScheduleTime = timestamppb.New(now.Add(off))
		task.GetHttpRequest().Body = []byte{byte('a' + i)}
		names = append(names, e.createTask(q.Name, task).Name)
	}

	list := func(view cloudtaskspb.Task_View) []*cloudtaskspb.Task {
		it := e.c.ListTasks(e.ctx, &cloudtaskspb.ListTasksRequest{Parent: q.Name, ResponseView: view})
		pager := iterator.NewPager(it, 2, "")
		var all []*cloudtaskspb.Task
		for {
			var page []*cloudtaskspb.Task
			next, err := pager.NextPage(&page)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 2 {
				t.Fatalf("page of %d tasks with page_size 2", len(page))
			}
			all = append(all, page...)
			if next == "" {
				return all
			}
		}
	}
	basic := list(cloudtaskspb.Task_BASIC)
	if len(basic) != len(offsets) {
		t.Fatalf("listed %d tasks, want %d", len(basic), len(offsets))
	}
	for i := 1; i < len(basic); i++ {
		if basic[i].ScheduleTime.AsTime().Before(basic[i-1].ScheduleTime.AsTime()) {
			t.Fatalf("tasks not ordered by schedule_time: %v before %v", basic[i-1].ScheduleTime.AsTime(), basic[i].ScheduleTime.AsTime())
		}
	}
	for _, task := range basic {
		if len(task.GetHttpRequest().GetBody()) != 0 || task.View != cloudtaskspb.Task_BASIC {
			t.Errorf("BASIC view returned body %q / view %v", task.GetHttpRequest().GetBody(), task.View)
		}
	}
	for _, task := range list(cloudtaskspb.Task_FULL) {
		if len(task.GetHttpRequest().GetBody()) != 1 {
			t.Errorf("FULL view body = %q, want the 1-byte body", task.GetHttpRequest().GetBody())
		}
	}

	g, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: names[0]})
	if err != nil || len(g.GetHttpRequest().GetBody()) != 0 {
		t.Fatalf("GetTask BASIC = %v, %v", g, err)
	}
	g, err = e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: names[0], ResponseView: cloudtaskspb.Task_FULL})
	if err != nil || string(g.GetHttpRequest().GetBody()) != "a" {
		t.Fatalf("GetTask FULL = %v, %v", g, err)
	}

	if err := e.c.DeleteTask(e.ctx, &cloudtaskspb.DeleteTaskRequest{Name: names[0]}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: names[0]})
	wantCode(t, err, codes.NotFound, "GetTask after delete")
	err = e.c.DeleteTask(e.ctx, &cloudtaskspb.DeleteTaskRequest{Name: names[0]})
	wantCode(t, err, codes.NotFound, "second DeleteTask")
	_, err = e.c.RunTask(e.ctx, &cloudtaskspb.RunTaskRequest{Name: names[0]})
	wantCode(t, err, codes.NotFound, "RunTask after delete")
	if n := len(list(cloudtaskspb.Task_BASIC)); n != len(offsets)-1 {
		t.Fatalf("listed %d tasks after delete, want %d", n, len(offsets)-1)
	}

	// Purge removes everything and reserves the names.
	pq, err := e.c.PurgeQueue(e.ctx, &cloudtaskspb.PurgeQueueRequest{Name: q.Name})
	if err != nil || pq.PurgeTime == nil {
		t.Fatalf("PurgeQueue = %v, %v", pq, err)
	}
	if n := len(list(cloudtaskspb.Task_BASIC)); n != 0 {
		t.Fatalf("%d tasks left after purge", n)
	}
	_, err = e.c.CreateTask(e.ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.Name, Task: httpTask(names[1], "http://127.0.0.1:1/x")})
	wantCode(t, err, codes.AlreadyExists, "CreateTask(purged name)")
	it := e.c.ListTasks(e.ctx, &cloudtaskspb.ListTasksRequest{Parent: testLoc + "/queues/missing"})
	_, err = it.Next()
	wantCode(t, err, codes.NotFound, "ListTasks(missing queue)")
}

func TestBatchCreateAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	q := e.pausedQueue("batch", nil)
	url := "http://127.0.0.1:1/x"
	dup := q.Name + "/tasks/b1"
	op, err := e.c.BatchCreateTasks(e.ctx, &cloudtaskspb.BatchCreateTasksRequest{
		Parent: q.Name,
		Requests: []*cloudtaskspb.CreateTaskRequest{
			{Parent: q.Name, Task: httpTask(dup, url)},
			{Parent: q.Name, Task: httpTask(dup, url)},
			{Parent: q.Name, Task: httpTask("", url)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := op.Wait(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tasks) != 2 {
		t.Fatalf("batch created %d tasks, want 2", len(resp.Tasks))
	}
	md, err := op.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := md.FailedRequests[1]; !ok || codes.Code(st.Code) != codes.AlreadyExists || len(md.FailedRequests) != 1 {
		t.Fatalf("failed requests = %v, want index 1 AlreadyExists", md.FailedRequests)
	}
	if md.State != cloudtaskspb.BatchCreateTasksMetadata_PARTIALLY_SUCCEEDED {
		t.Errorf("batch state = %v", md.State)
	}

	del, err := e.c.BatchDeleteTasks(e.ctx, &cloudtaskspb.BatchDeleteTasksRequest{
		Parent: q.Name,
		Names:  []string{resp.Tasks[0].Name, resp.Tasks[1].Name, q.Name + "/tasks/missing"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := del.Wait(e.ctx); err != nil {
		t.Fatal(err)
	}
	dmd, err := del.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := dmd.FailedRequests[2]; !ok || codes.Code(st.Code) != codes.NotFound || len(dmd.FailedRequests) != 1 {
		t.Fatalf("failed deletes = %v, want index 2 NotFound", dmd.FailedRequests)
	}
	for _, task := range resp.Tasks {
		_, err := e.c.GetTask(e.ctx, &cloudtaskspb.GetTaskRequest{Name: task.Name})
		wantCode(t, err, codes.NotFound, "GetTask after batch delete")
	}
}
