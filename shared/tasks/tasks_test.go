package tasks

import (
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

// TestQueueOf: a unit due now (or within half a second) goes to the work
// queue; a later one (a delayed retry, a watchdog, a timeout) to timers.
func TestQueueOf(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	d := &Dispatcher{WorkQueue: "projects/p/locations/l/queues/work", TimersQueue: "projects/p/locations/l/queues/timers"}
	cases := []struct {
		name      string
		notBefore time.Time
		want      string
	}{
		{"no schedule time", time.Time{}, d.WorkQueue},
		{"in the past", now.Add(-time.Minute), d.WorkQueue},
		{"now", now, d.WorkQueue},
		{"within half a second", now.Add(500 * time.Millisecond), d.WorkQueue},
		{"later", now.Add(501 * time.Millisecond), d.TimersQueue},
		{"a delayed retry", now.Add(2 * time.Second), d.TimersQueue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := types.Command{Kind: types.CmdRunStep, ExecutionID: "ex1", Step: "s", StepRun: 1, NotBefore: c.notBefore}
			if got := d.queueOf(cmd, now); got != c.want {
				t.Fatalf("queueOf = %s, want %s", got, c.want)
			}
		})
	}
}
