package egress

import "errors"

// Adopt makes t count as task u from now on: u's own bound and its
// execution's (Conns.Task). A warm sandbox's network is built before its
// task is known, with a counter of no bound; the runner binds it to the
// task's at hand-out. It fails when t already holds a connection (the
// warm sandbox reached out before it had a task: discard it). A nil u
// leaves t unbounded.
func (t *TaskConns) Adopt(u *TaskConns) error {
	if t == nil {
		return errors.New("egress: no connection counter to bind")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n > 0 {
		return errors.New("egress: the warm sandbox holds connections from before its task")
	}
	if u == nil {
		t.c, t.exec, t.max = nil, "", 0
		return nil
	}
	t.c, t.exec, t.max = u.c, u.exec, u.max
	return nil
}
