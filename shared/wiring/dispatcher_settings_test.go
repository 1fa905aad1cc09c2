package wiring

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// TestDispatcherFromSettings: the Cloud Tasks dispatcher the functions
// build (DefaultBuilders, against the Cloud Tasks emulator served
// in-process) creates a due unit in NOETL_WORK_QUEUE and a delayed one in
// NOETL_TIMERS_QUEUE, both under NOETL_LOCATION, each targeting
// NOETL_EXECUTE_URL with NOETL_DISPATCH_DEADLINE_S as its dispatch
// deadline.
func TestDispatcherFromSettings(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := cloudtasks.NewServer(cloudtasks.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	t.Setenv("CLOUDTASKS_EMULATOR_HOST", lis.Addr().String())
	env := map[string]string{
		"GOOGLE_CLOUD_PROJECT":      "p",
		"NOETL_LOCATION":            "europe-west1",
		"NOETL_WORK_QUEUE":          "work-2",
		"NOETL_TIMERS_QUEUE":        "timers-2",
		"NOETL_EXECUTE_URL":         "https://execute.example/run",
		"NOETL_DISPATCH_DEADLINE_S": "500",
	}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := DefaultBuilders().Dispatcher(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	const loc = "projects/p/locations/europe-west1"
	work, timers := loc+"/queues/work-2", loc+"/queues/timers-2"
	for _, q := range []string{work, timers} {
		if _, err := d.Client().CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: loc, Queue: &cloudtaskspb.Queue{Name: q}}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Client().PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	d.Deadline = cfg.DispatchDeadline // as Deps.Ensure does (TestDepsWireSettings)
	if d.Signer, err = sign.Parse("dispatcher-settings-key-0123456789abcdef012"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	due := types.Command{Kind: types.CmdRunStep, ExecutionID: "1234567890123456789", Step: "due", StepRun: 1}
	later := types.Command{Kind: types.CmdRunStep, ExecutionID: "1234567890123456789", Step: "later", StepRun: 1, NotBefore: now.Add(time.Hour)}
	for _, c := range []types.Command{due, later} {
		if _, err := d.TaskCreate(ctx, c, now); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{work: due.TaskName(), timers: later.TaskName()} {
		it := d.Client().ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q, ResponseView: cloudtaskspb.Task_FULL})
		var names []string
		for {
			tk, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tk.Name)
			if u := tk.GetHttpRequest().GetUrl(); u != "https://execute.example/run" {
				t.Errorf("task %s targets %s, want NOETL_EXECUTE_URL", tk.Name, u)
			}
			if dl := tk.GetDispatchDeadline().AsDuration(); dl != 500*time.Second {
				t.Errorf("task %s: dispatch deadline %s, want NOETL_DISPATCH_DEADLINE_S (500 s)", tk.Name, dl)
			}
		}
		if len(names) != 1 || names[0] != q+"/tasks/"+want {
			t.Errorf("queue %s holds %v, want the task %s", q, names, want)
		}
	}
}
