package worker

import (
	"sync"
	"time"
)

// Duplicate deliveries. A side-effecting unit is protected by its lease
// wherever its deliveries land. A read-only unit (engine.SideEffecting) is
// not leased: running it twice is harmless (its boundary applies once, its
// events dedup by id). Still, two deliveries of the same Cloud Task that
// reach the same instance — the same attempt delivered twice at the same
// moment, or again shortly after it ended — are recognised here by task
// name, without any I/O, so an instance runs a unit's tools once.

// recentDone bounds how long an ended task's name is remembered.
const recentDone = 10 * time.Minute

// deliveries tracks the task names in flight and recently ended in this
// instance.
type deliveries struct {
	mu       sync.Mutex
	inflight map[string]bool
	done     map[string]time.Time
	pruned   time.Time
}

// begin reports whether a delivery of name may run: false when the same
// task is in flight (dup="inflight") or ended recently (dup="done").
func (d *deliveries) begin(name string, now time.Time) (ok bool, dup string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight == nil {
		d.inflight, d.done = map[string]bool{}, map[string]time.Time{}
	}
	if d.inflight[name] {
		return false, "inflight"
	}
	if t, ok := d.done[name]; ok && now.Sub(t) < recentDone {
		return false, "done"
	}
	d.inflight[name] = true
	return true, ""
}

// end records the end of a delivery; ended reports that the task is
// finished (it will not run again), so later deliveries are dropped.
func (d *deliveries) end(name string, ended bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inflight, name)
	if !ended {
		return
	}
	d.done[name] = now
	if now.Sub(d.pruned) > time.Minute {
		for k, t := range d.done {
			if now.Sub(t) >= recentDone {
				delete(d.done, k)
			}
		}
		d.pruned = now
	}
}
