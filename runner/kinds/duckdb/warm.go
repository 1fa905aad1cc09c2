package duckdb

import (
	"time"

	"golang.org/x/sys/unix"
)

// DefaultWarmMaxAge is how long a warm worker waits for a task before it
// is replaced, when Options.WarmMaxAge is 0.
const DefaultWarmMaxAge = 10 * time.Minute

// maxAge is the pool's WarmMaxAge.
func (p *warmPool) maxAge() time.Duration {
	if p.t.opts.WarmMaxAge > 0 {
		return p.t.opts.WarmMaxAge
	}
	return DefaultWarmMaxAge
}

// stale reports whether a ready worker must not be handed out: its
// process exited while it waited, or it is older than the pool's max age.
// A stale worker is closed (in the background) and replaced. A nil
// worker (a failed start) is not stale: it tells a waiting task to start
// its own.
func (p *warmPool) stale(w *worker) bool {
	if w == nil {
		return false
	}
	if time.Since(w.born) <= p.maxAge() && w.alive() {
		return false
	}
	go w.close()
	p.fill()
	return true
}

// alive reports whether the worker's process has not exited (waitid
// without reaping it: Wait still collects it; a child that has not
// exited leaves the siginfo zero).
func (w *worker) alive() bool {
	if w.cmd.Process == nil {
		return false
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, w.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		return false
	}
	return info.Signo == 0 // WNOHANG, no exit: the kernel leaves it zero
}

// janitor replaces the ready workers that went stale, every quarter of
// the max age (at most every 30 s), until the pool closes.
func (p *warmPool) janitor() {
	every := min(max(p.maxAge()/4, 10*time.Millisecond), 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		p.sweep()
	}
}

// sweep takes every ready worker out once and puts back the ones still
// usable (under the pool's lock: start does not add one meanwhile, so
// they fit back), then starts replacements.
func (p *warmPool) sweep() {
	p.mu.Lock()
	var keep []*worker
	for n := len(p.ready); n > 0; n-- {
		select {
		case w := <-p.ready:
			if w != nil && (time.Since(w.born) > p.maxAge() || !w.alive()) {
				go w.close()
				continue
			}
			keep = append(keep, w)
		default:
			n = 1
		}
	}
	for _, w := range keep {
		p.ready <- w
	}
	p.mu.Unlock()
	p.fill()
}
