package sandbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeWarm is a warm sandbox of the pool tests: an id, alive until
// killed or destroyed.
type fakeWarm struct {
	id        int
	dead      atomic.Bool
	destroyed atomic.Int32
}

func (f *fakeWarm) Alive() bool { return !f.dead.Load() && f.destroyed.Load() == 0 }
func (f *fakeWarm) Destroy()    { f.destroyed.Add(1) }

type fakeStarts struct {
	mu   sync.Mutex
	all  []*fakeWarm
	fail atomic.Bool
}

func (s *fakeStarts) start(ctx context.Context) (*fakeWarm, error) {
	if s.fail.Load() {
		return nil, errors.New("start refused")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &fakeWarm{id: len(s.all)}
	s.all = append(s.all, w)
	return w, nil
}

// settle waits until the pool has size ready sandboxes and none starting.
func settle(t *testing.T, p *Pool[*fakeWarm], size int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := p.Stats(); st.Ready == size && st.Starting == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the pool did not settle at %d ready: %+v", size, p.Stats())
}

// TestPoolNeverReusesAndReplaces: every Take hands out a sandbox never
// handed out before, even after the previous one was destroyed; each one
// taken is replaced in the background, so the pool is back at its size
// (NOETL_PYTHON_WARM_INTERPRETERS) and never holds more.
func TestPoolNeverReusesAndReplaces(t *testing.T) {
	s := &fakeStarts{}
	p := NewPool(PoolOptions{Size: 3}, s.start)
	defer p.Close()
	settle(t, p, 3)
	seen := map[*fakeWarm]bool{}
	for i := range 20 {
		w, ok := p.Take(context.Background())
		if !ok {
			t.Fatalf("take %d: none", i)
		}
		if seen[w] {
			t.Fatalf("take %d: sandbox %d handed out a second time", i, w.id)
		}
		if w.destroyed.Load() != 0 || !w.Alive() {
			t.Fatalf("take %d: handed out a destroyed sandbox", i)
		}
		seen[w] = true
		w.Destroy() // the task's end
		if i%5 == 0 {
			settle(t, p, 3)
		}
	}
	settle(t, p, 3)
	st := p.Stats()
	if st.Handed != 20 || st.Started != 23 {
		t.Fatalf("stats %+v: want 20 handed, 23 started (20 replacements of a pool of 3)", st)
	}
	s.mu.Lock()
	n := len(s.all)
	s.mu.Unlock()
	if n != 23 {
		t.Fatalf("%d sandboxes started, want 23: the pool exceeded its size", n)
	}
}

// TestPoolDiscardsDeadAndOld: a ready sandbox whose process died is
// destroyed, not handed out; so is one older than MaxAge
// (NOETL_SANDBOX_WARM_MAX_AGE_S), and the janitor replaces it without a
// Take.
func TestPoolDiscardsDeadAndOld(t *testing.T) {
	s := &fakeStarts{}
	p := NewPool(PoolOptions{Size: 1}, s.start)
	settle(t, p, 1)
	s.mu.Lock()
	first := s.all[0]
	s.mu.Unlock()
	first.dead.Store(true)
	w, ok := p.Take(context.Background())
	if !ok || w == first {
		t.Fatalf("took %v (ok %v): the dead sandbox was handed out", w, ok)
	}
	if first.destroyed.Load() == 0 {
		deadline := time.Now().Add(time.Second)
		for first.destroyed.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if first.destroyed.Load() == 0 {
			t.Fatal("the dead sandbox was not destroyed")
		}
	}
	p.Close()

	old := NewPool(PoolOptions{Size: 1, MaxAge: 40 * time.Millisecond}, s.start)
	defer old.Close()
	settle(t, old, 1)
	s.mu.Lock()
	aged := s.all[len(s.all)-1]
	s.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for aged.destroyed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if aged.destroyed.Load() == 0 {
		t.Fatalf("a sandbox older than MaxAge was kept: %+v", old.Stats())
	}
	if st := old.Stats(); st.Dropped == 0 || st.Started < 2 {
		t.Fatalf("stats %+v: the old sandbox was neither dropped nor replaced", st)
	}
}

func contextWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestPoolSizeZeroAndClose: a pool of size 0 starts nothing and hands
// out nothing; Close destroys the ready sandboxes and Take returns none
// afterwards; a failed start makes Take return none (the caller starts
// its own) instead of waiting.
func TestPoolSizeZeroAndClose(t *testing.T) {
	s := &fakeStarts{}
	off := NewPool(PoolOptions{Size: 0}, s.start)
	if _, ok := off.Take(context.Background()); ok {
		t.Fatal("a pool of size 0 handed out a sandbox")
	}
	time.Sleep(10 * time.Millisecond)
	if len(s.all) != 0 {
		t.Fatalf("a pool of size 0 started %d sandboxes", len(s.all))
	}
	p := NewPool(PoolOptions{Size: 2}, s.start)
	settle(t, p, 2)
	p.Close()
	s.mu.Lock()
	for _, w := range s.all {
		if w.destroyed.Load() != 1 {
			t.Errorf("sandbox %d destroyed %d times at Close, want 1", w.id, w.destroyed.Load())
		}
	}
	s.mu.Unlock()
	if _, ok := p.Take(context.Background()); ok {
		t.Fatal("a closed pool handed out a sandbox")
	}

	s.fail.Store(true)
	f := NewPool(PoolOptions{Size: 1}, s.start)
	defer f.Close()
	if _, ok := f.Take(contextWithin(t, 5*time.Second)); ok {
		t.Fatal("a pool whose starts fail handed out a sandbox")
	}

	// A failing pool whose next start is under way (in its backoff, or
	// slow) does not make a task wait for it.
	release := make(chan struct{})
	var calls atomic.Int32
	g := NewPool(PoolOptions{Size: 1}, func(ctx context.Context) (*fakeWarm, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("start refused")
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("start refused")
	})
	defer g.Close()
	defer close(release)
	for g.Stats().Starting != 0 || calls.Load() == 0 {
		time.Sleep(time.Millisecond) // the first start failed
	}
	g.Sweep() // starts the next one: it waits for release
	for g.Stats().Starting != 1 {
		time.Sleep(time.Millisecond)
	}
	ctx := contextWithin(t, 3*time.Second)
	if _, ok := g.Take(ctx); ok || ctx.Err() != nil {
		t.Fatalf("a failing pool: Take ok=%v after its context ended (%v): it waited for a start under way", ok, ctx.Err())
	}
}

// TestPoolDeferredReplacement: a sandbox handed out by TakeDeferred is
// replaced only once its task says it is done (nothing starts beside the
// task), exactly once however often done is called; tasks that find the
// pool empty meanwhile still get a start each at once.
func TestPoolDeferredReplacement(t *testing.T) {
	s := &fakeStarts{}
	p := NewPool(PoolOptions{Size: 2}, s.start)
	defer p.Close()
	settle(t, p, 2)
	w, done, ok := p.TakeDeferred(context.Background())
	if !ok || w == nil {
		t.Fatal("none handed out")
	}
	time.Sleep(20 * time.Millisecond)
	if st := p.Stats(); st.Started != 2 || st.Ready != 1 || st.Starting != 0 {
		t.Fatalf("stats %+v while the task runs: want 2 started, 1 ready, none starting (the replacement waits for done)", st)
	}
	done()
	done()
	settle(t, p, 2)
	if st := p.Stats(); st.Started != 3 {
		t.Fatalf("stats %+v after done: want 3 started (one replacement)", st)
	}
	// Both taken and not done: a third task waits, and gets a start of
	// its own at once.
	_, d1, _ := p.TakeDeferred(context.Background())
	_, d2, _ := p.TakeDeferred(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w3, d3, ok := p.TakeDeferred(ctx)
	if !ok || w3 == nil {
		t.Fatal("a task that found the pool empty got none")
	}
	d1()
	d2()
	d3()
	settle(t, p, 2)
	if st := p.Stats(); st.Handed != 4 || st.Started != 6 {
		t.Fatalf("stats %+v: want 4 handed, 6 started", st)
	}
	// Off: none, and done is harmless.
	off := NewPool(PoolOptions{}, s.start)
	if _, d, ok := off.TakeDeferred(context.Background()); ok {
		t.Fatal("an empty pool handed one out")
	} else {
		d()
	}
}
