package meter

import (
	"sync"
	"time"
)

// DefaultConcurrency is the requests one function instance serves at once
// in the price model (Cloud Run's default concurrency).
const DefaultConcurrency = 80

// Activity prices a function's handler time the way Cloud Run bills
// request-based instances: an instance is billed while at least one
// request is in flight, and requests in flight together share that time.
// Each request is charged dt × instances / in-flight for every interval dt
// it was in flight, where instances = ceil(in-flight / Concurrency): the
// sum over all requests equals the billable instance time. (The 100 ms
// rounding of each idle-to-busy period is not attributed to executions.)
// It is kept per process and per function; safe for concurrent use.
type Activity struct {
	// Function names the function ("execute", "route", ...).
	Function string
	// Concurrency is the requests one instance serves at once (≤ 0:
	// DefaultConcurrency).
	Concurrency int

	mu       sync.Mutex
	last     time.Time
	inflight map[*Request]struct{}
}

// Request is one request in flight (Activity.Begin).
type Request struct {
	a    *Activity
	ms   float64
	once sync.Once
	done float64
}

var activities sync.Map // function name → *Activity

// ActivityOf returns the process's Activity of a function.
func ActivityOf(function string) *Activity {
	if a, ok := activities.Load(function); ok {
		return a.(*Activity)
	}
	a, _ := activities.LoadOrStore(function, &Activity{Function: function})
	return a.(*Activity)
}

// accrue charges the time since the last change to the requests in flight.
func (a *Activity) accrue(now time.Time) {
	n := len(a.inflight)
	if n > 0 && !a.last.IsZero() {
		conc := a.Concurrency
		if conc <= 0 {
			conc = DefaultConcurrency
		}
		instances := (n + conc - 1) / conc
		share := float64(now.Sub(a.last).Microseconds()) / 1000 * float64(instances) / float64(n)
		for r := range a.inflight {
			r.ms += share
		}
	}
	a.last = now
}

// Begin records the start of a request.
func (a *Activity) Begin() *Request {
	r := &Request{a: a}
	a.mu.Lock()
	a.accrue(time.Now())
	if a.inflight == nil {
		a.inflight = map[*Request]struct{}{}
	}
	a.inflight[r] = struct{}{}
	a.mu.Unlock()
	return r
}

// End records the end of the request and returns its share of billable
// instance time in milliseconds (later calls return the same).
func (r *Request) End() float64 {
	r.once.Do(func() {
		a := r.a
		a.mu.Lock()
		a.accrue(time.Now())
		delete(a.inflight, r)
		a.mu.Unlock()
		r.done = r.ms
	})
	return r.done
}

// Track begins a request of function for an execution on the context's
// meter; the returned function ends it and counts the invocation and its
// instance time.
func Track(m *Meter, function, executionID string) (end func()) {
	r := ActivityOf(function).Begin()
	return func() {
		ms := r.End()
		m.Add(executionID, Invocations(function), 1)
		m.Add(executionID, Milliseconds(function), ms)
	}
}
