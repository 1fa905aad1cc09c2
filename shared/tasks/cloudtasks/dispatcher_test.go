package cloudtasks_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path"
	"testing"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	ctemu "github.com/noetl/gcpengine/emulators/cloudtasks"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/tasks/cloudtasks"
	"github.com/noetl/gcpengine/shared/tasks/taskstest"
	"github.com/noetl/gcpengine/shared/types"
)

// TestDispatcherConformance runs the tasks suite on the Cloud Tasks
// driver against the Cloud Tasks emulator (emulators/cloudtasks, served
// in-process) with a work and a timers queue, both paused so that every
// task stays pending; large bodies go to an in-memory results tier.
func TestDispatcherConformance(t *testing.T) {
	signer, err := sign.Parse("taskstest-key-0123456789abcdef0123456789abcd")
	if err != nil {
		t.Fatal(err)
	}
	taskstest.Run(t, func(t *testing.T) taskstest.Harness {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := ctemu.NewServer(ctemu.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		go func() { _ = srv.Serve(lis) }()
		t.Setenv("CLOUDTASKS_EMULATOR_HOST", lis.Addr().String())
		ctx := context.Background()
		const loc = "projects/p/locations/us-central1"
		work, timers := loc+"/queues/work", loc+"/queues/timers"
		d, err := cloudtasks.Open(ctx, work, timers, "http://127.0.0.1:1/execute")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(); srv.Stop() })
		for _, q := range []string{work, timers} {
			if _, err := d.Client().CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: loc, Queue: &cloudtaskspb.Queue{Name: q}}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Client().PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
				t.Fatal(err)
			}
		}
		bodies := results.NewMemory()
		d.Signer, d.Bodies = signer, bodies
		return taskstest.Harness{Creator: d, Pending: func(ctx context.Context) ([]taskstest.Task, error) {
			var out []taskstest.Task
			for _, q := range []string{work, timers} {
				it := d.Client().ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q, ResponseView: cloudtaskspb.Task_FULL})
				for {
					tk, err := it.Next()
					if err == iterator.Done {
						break
					}
					if err != nil {
						return nil, err
					}
					hr := tk.GetHttpRequest()
					if err := signer.Verify(sign.Command, hr.Body, hr.Headers[sign.Header]); err != nil {
						t.Errorf("task %s: body not signed: %v", tk.Name, err)
					}
					var cmd types.Command
					if err := jsonx.Unmarshal(hr.Body, &cmd); err != nil {
						return nil, err
					}
					if cmd, err = tasks.LoadBody(ctx, bodies, cmd); err != nil {
						return nil, err
					}
					out = append(out, taskstest.Task{Name: path.Base(tk.Name), Cmd: cmd, ScheduleTime: tk.GetScheduleTime().AsTime()})
				}
			}
			return out, nil
		}}
	})
}
