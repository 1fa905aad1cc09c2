package memtasks_test

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/tasks/memtasks"
	"github.com/noetl/gcpengine/shared/tasks/taskstest"
)

// TestTasksConformance holds the in-memory task queue to the tasks
// contract the Cloud Tasks driver passes on the emulator
// (shared/tasks/cloudtasks).
func TestTasksConformance(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) taskstest.Harness {
		q := &memtasks.Tasks{}
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
