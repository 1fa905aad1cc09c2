package controltest_test

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/bus/bustest"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/resultstest"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks/taskstest"
)

// TestPublisherConformance holds the fake publisher to the bus contract
// the Pub/Sub driver passes (shared/bus pubsub_test.go).
func TestPublisherConformance(t *testing.T) {
	signer, err := sign.Parse("bustest-key-0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Run(t, func(t *testing.T) bustest.Harness {
		p := &controltest.Publisher{Signer: signer}
		return bustest.Harness{Publisher: p, Signer: signer,
			Received: func(_ context.Context, topic bustest.Topic, _ int) ([]bustest.Message, error) {
				var out []bustest.Message
				for _, m := range p.Messages(string(topic)) {
					out = append(out, bustest.Message{Data: m.Data, Attributes: m.Attributes})
				}
				return out, nil
			}}
	})
}

// TestTasksConformance holds the fake task queue to the tasks contract the
// Cloud Tasks driver passes on the emulator (shared/tasks
// dispatcher_test.go).
func TestTasksConformance(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) taskstest.Harness {
		q := &controltest.Tasks{}
		return taskstest.Harness{Creator: q, Pending: func(context.Context) ([]taskstest.Task, error) {
			var out []taskstest.Task
			for _, tk := range q.Tasks() {
				if !tk.Taken && !tk.Deleted {
					out = append(out, taskstest.Task{Name: tk.Name, Cmd: tk.Cmd, ScheduleTime: tk.Cmd.NotBefore})
				}
			}
			return out, nil
		}}
	})
}

// TestOffloaderConformance holds the fake results tier to the contract
// results.Store passes (shared/results offloader_test.go).
func TestOffloaderConformance(t *testing.T) {
	resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
		return &controltest.Offloader{InlineMax: inlineMax}
	})
}
