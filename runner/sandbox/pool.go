package sandbox

import (
	"context"
	"sync"
	"time"
)

// Warm is a sandboxed command started ahead of its task (a warm sandbox:
// its room, control group, uid slot, network and, for python, its
// interpreter with the standard imports loaded), waiting for the task's
// input on a pipe. It serves one task and is then destroyed.
type Warm interface {
	// Alive reports whether it still waits: its process has not exited.
	Alive() bool
	// Destroy kills it and releases its room (idempotent).
	Destroy()
}

// PoolOptions are a Pool's size and reuse rules.
type PoolOptions struct {
	// Size is how many warm sandboxes the pool keeps ready or starting
	// beyond the tasks waiting for one (0: no pool, Take returns none).
	Size int
	// MaxAge discards a ready sandbox older than this instead of handing
	// it out (its room was built then: the allowed hosts were resolved,
	// the interpreter loaded); the janitor replaces it. 0: no limit.
	MaxAge time.Duration
}

// Pool keeps warm sandboxes ready and hands each out once: Take removes it
// from the pool, and the pool starts a replacement in the background. A
// sandbox is never handed out twice and never returns to the pool: the
// task that took it destroys it. A ready sandbox whose process died, or
// that is older than MaxAge, is destroyed, not handed out. Close destroys
// the ready ones and stops the starts under way (their context ends).
// Safe for concurrent use.
type Pool[W Warm] struct {
	opts   PoolOptions
	start  func(ctx context.Context) (W, error)
	ctx    context.Context
	cancel context.CancelFunc
	now    func() time.Time

	// bg counts the starts under way and the destroys in the background:
	// Close waits for them.
	bg sync.WaitGroup

	mu       sync.Mutex
	ready    []pooled[W]
	starting int
	waiting  int
	deferred int // handed out by TakeDeferred, replacement not started yet
	closed   bool
	signal   chan struct{} // closed and replaced when ready changes
	failures int           // consecutive failed starts (backoff)
	started  int           // sandboxes started (tests, figures)
	handed   int           // sandboxes handed out
	dropped  int           // sandboxes discarded: dead or too old
}

type pooled[W Warm] struct {
	w    W
	born time.Time
}

// NewPool returns a pool that makes its sandboxes with start, under a
// context Close ends (start must tie the sandbox's life to it). It
// starts Size sandboxes at once; nothing when Size is 0.
func NewPool[W Warm](opts PoolOptions, start func(ctx context.Context) (W, error)) *Pool[W] {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool[W]{opts: opts, start: start, ctx: ctx, cancel: cancel, now: time.Now, signal: make(chan struct{})}
	if opts.Size <= 0 {
		return p
	}
	p.mu.Lock()
	p.fillLocked()
	p.mu.Unlock()
	if opts.MaxAge > 0 {
		go p.janitor()
	}
	return p
}

// Size returns the pool's size (PoolOptions.Size).
func (p *Pool[W]) Size() int {
	if p == nil {
		return 0
	}
	return p.opts.Size
}

// Take hands out a ready sandbox, removing it from the pool, and starts
// its replacement. When none is ready it waits for one being started
// (one more is started for each task waiting) until ctx ends; ok is
// false then, when the pool is off or closed, or when the last start
// failed and none has succeeded since (the caller starts a sandbox of its
// own at once).
func (p *Pool[W]) Take(ctx context.Context) (w W, ok bool) {
	return p.take(ctx, false)
}

// TakeDeferred is Take, except that the replacement of the sandbox it
// hands out starts only when done is called (the caller calls it once its
// task has answered): starting a sandbox (a room, an interpreter's
// imports) then does not compete with the task for the CPU, and a
// sequential chain's next task still finds the ones ready beside it.
// Tasks that wait for a sandbox still get a start each at once. done is
// idempotent and a no-op when ok is false; a caller that got ok must call
// it, or the pool stays one short.
func (p *Pool[W]) TakeDeferred(ctx context.Context) (w W, done func(), ok bool) {
	w, ok = p.take(ctx, true)
	if !ok {
		return w, func() {}, false
	}
	var once sync.Once
	return w, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.deferred--
			p.fillLocked()
		})
	}, true
}

// take is Take; deferred: the replacement waits for TakeDeferred's done.
func (p *Pool[W]) take(ctx context.Context, deferred bool) (w W, ok bool) {
	if p == nil || p.opts.Size <= 0 {
		return w, false
	}
	p.mu.Lock()
	p.waiting++
	defer func() {
		p.waiting--
		p.fillLocked()
		p.mu.Unlock()
	}()
	for {
		if p.closed {
			return w, false
		}
		for len(p.ready) > 0 {
			e := p.ready[0]
			p.ready = p.ready[1:]
			if !p.usable(e) {
				p.dropped++
				p.destroyLocked(e.w)
				continue
			}
			p.handed++
			if deferred {
				p.deferred++
			}
			return e.w, true
		}
		if p.failures > 0 {
			// A failing pool delays no task: its next start may sleep
			// in its backoff and fail again (the caller starts its own;
			// the pool keeps trying, one start at a time).
			return w, false
		}
		p.fillLocked()
		sig := p.signal
		p.mu.Unlock()
		select {
		case <-sig:
			p.mu.Lock()
		case <-ctx.Done():
			p.mu.Lock()
			return w, false
		}
	}
}

// usable: alive and young enough.
func (p *Pool[W]) usable(e pooled[W]) bool {
	if p.opts.MaxAge > 0 && p.now().Sub(e.born) > p.opts.MaxAge {
		return false
	}
	return e.w.Alive()
}

// fillLocked starts sandboxes until Size of them (less those handed out
// whose replacement is deferred, TakeDeferred), beyond the tasks waiting,
// are ready or starting. After a failed start it starts one at a
// time (the next fill after it ends).
func (p *Pool[W]) fillLocked() {
	want := p.opts.Size + p.waiting - p.deferred
	for !p.closed && len(p.ready)+p.starting < want {
		if p.failures > 0 && p.starting > 0 {
			return
		}
		p.starting++
		p.started++
		p.bg.Add(1)
		go p.run()
	}
}

// run starts one sandbox and adds it to the ready ones.
func (p *Pool[W]) run() {
	defer p.bg.Done()
	p.mu.Lock()
	delay := time.Duration(0)
	if p.failures > 0 {
		delay = min(time.Duration(p.failures)*100*time.Millisecond, 5*time.Second)
	}
	p.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-p.ctx.Done():
		}
	}
	w, err := p.start(p.ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	if err != nil {
		p.failures++
		p.notifyLocked()
		return
	}
	p.failures = 0
	if p.closed {
		p.destroyLocked(w)
		return
	}
	p.ready = append(p.ready, pooled[W]{w: w, born: p.now()})
	p.notifyLocked()
}

// destroyLocked destroys w in the background (Close waits for it).
func (p *Pool[W]) destroyLocked(w W) {
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		w.Destroy()
	}()
}

func (p *Pool[W]) notifyLocked() {
	close(p.signal)
	p.signal = make(chan struct{})
}

// janitor destroys ready sandboxes that died or outlived MaxAge and
// starts their replacements, every quarter of MaxAge (at most every
// 30 s, at least every 10 ms).
func (p *Pool[W]) janitor() {
	every := min(max(p.opts.MaxAge/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.Sweep()
	}
}

// Sweep destroys the ready sandboxes that died or outlived MaxAge and
// starts their replacements (the janitor calls it; a test may too).
func (p *Pool[W]) Sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.ready[:0]
	for _, e := range p.ready {
		if p.usable(e) {
			keep = append(keep, e)
			continue
		}
		p.dropped++
		p.destroyLocked(e.w)
	}
	clear(p.ready[len(keep):])
	p.ready = keep
	p.fillLocked()
}

// Ready returns the sandboxes ready now; they stay in the pool (for
// inspection: a caller must not use or destroy them).
func (p *Pool[W]) Ready() []W {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]W, len(p.ready))
	for i, e := range p.ready {
		out[i] = e.w
	}
	return out
}

// PoolStats are a pool's counters.
type PoolStats struct {
	// Ready and Starting are the sandboxes ready and being started now.
	Ready, Starting int
	// Started, Handed and Dropped count the sandboxes started, handed out
	// and discarded (dead or too old) since the pool was made.
	Started, Handed, Dropped int
}

// Stats returns the pool's counters.
func (p *Pool[W]) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Ready: len(p.ready), Starting: p.starting, Started: p.started, Handed: p.handed, Dropped: p.dropped}
}

// Close destroys the ready sandboxes and ends the starts under way (their
// context); what they start afterwards is destroyed. It returns when
// every sandbox of the pool not handed out is destroyed. Take returns
// none from then on. Idempotent.
func (p *Pool[W]) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.notifyLocked()
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, e := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.w.Destroy()
		}()
	}
	wg.Wait()
	p.bg.Wait()
}
