package meter

import (
	"context"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestMeterAddDrain(t *testing.T) {
	m := New()
	m.Add("a", FirestoreRead, 2)
	m.Add("a", FirestoreRead, 3)
	m.Add("a", FirestoreWrite, 1)
	m.Add("", FirestoreRead, 7) // no execution: not priced per execution
	m.Add("b", FirestoreRead, 0)
	if got := m.Drain("a"); !reflect.DeepEqual(got, map[string]float64{FirestoreRead: 5, FirestoreWrite: 1}) {
		t.Fatalf("drain a: %v", got)
	}
	if got := m.Drain("a"); got != nil {
		t.Fatalf("second drain: %v, want nil", got)
	}
	if got := m.Drain("b"); got != nil {
		t.Fatalf("a zero count created an entry: %v", got)
	}
	var nilMeter *Meter
	nilMeter.Add("a", FirestoreRead, 1) // must not panic
	if nilMeter.Drain("a") != nil {
		t.Fatal("nil meter drained something")
	}
}

func TestMeterConcurrentAdds(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				m.Add("a", TasksCreate, 1)
			}
		}()
	}
	wg.Wait()
	if got := m.Drain("a")[TasksCreate]; got != 8000 {
		t.Fatalf("%v counted, want 8000", got)
	}
}

func TestIdle(t *testing.T) {
	m := New()
	m.Add("old", FirestoreRead, 1)
	time.Sleep(5 * time.Millisecond)
	m.Add("new", FirestoreRead, 1)
	if got := m.Idle(0); !reflect.DeepEqual(got, []string{"old", "new"}) {
		t.Fatalf("Idle(0) = %v, want oldest first", got)
	}
	if got := m.Idle(time.Hour); len(got) != 0 {
		t.Fatalf("Idle(1h) = %v, want none", got)
	}
	// A later add does not make an entry younger: since is its first count.
	m.Add("old", FirestoreRead, 1)
	if got := m.Idle(0); got[0] != "old" {
		t.Fatalf("Idle(0) = %v", got)
	}
}

func TestMergeAndContext(t *testing.T) {
	if got := Merge(nil, map[string]float64{"x": 1}); !reflect.DeepEqual(got, map[string]float64{"x": 1}) {
		t.Fatalf("merge into nil: %v", got)
	}
	dst := map[string]float64{"x": 1}
	if got := Merge(dst, nil); !reflect.DeepEqual(got, map[string]float64{"x": 1}) {
		t.Fatalf("merge nil: %v", got)
	}
	if got := Merge(dst, map[string]float64{"x": 2, "y": 1}); !reflect.DeepEqual(got, map[string]float64{"x": 3, "y": 1}) {
		t.Fatalf("merge: %v", got)
	}
	m := New()
	ctx := With(context.Background(), m)
	if From(ctx) != m || From(context.Background()) != Default {
		t.Fatal("From does not return the context's meter (or Default)")
	}
	s := For(ctx, "a")
	s.Read(2)
	s.Write(1)
	s.Delete(3)
	s.Add(GCSClassA, 1)
	want := map[string]float64{FirestoreRead: 2, FirestoreWrite: 1, FirestoreDelete: 3, GCSClassA: 1}
	if got := m.Drain("a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("scope counts %v, want %v", got, want)
	}
	if Billable(10) != PubSubMinBytes || Billable(5000) != 5000 {
		t.Fatalf("Billable: %v, %v", Billable(10), Billable(5000))
	}
}

// within checks that got lies in [lo, hi] (milliseconds), with 1 µs of
// slack for the microsecond truncation of each accrual.
func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo-0.01 || got > hi+0.01 {
		t.Fatalf("%s = %.3f ms, want between %.3f and %.3f", what, got, lo, hi)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestActivity checks the attribution of instance time: it is bounded by
// the wall time measured around the requests (inner: while all of them
// were in flight; outer: from the first Begin to the last End).
func TestActivity(t *testing.T) {
	t.Run("one request alone gets its duration", func(t *testing.T) {
		a := &Activity{Function: "t1"}
		t0 := time.Now()
		r := a.Begin()
		t1 := time.Now()
		time.Sleep(20 * time.Millisecond)
		t2 := time.Now()
		got := r.End()
		t3 := time.Now()
		within(t, "charge", got, ms(t2.Sub(t1)), ms(t3.Sub(t0)))
		if again := r.End(); again != got {
			t.Fatalf("second End returned %v, first %v", again, got)
		}
	})
	cases := []struct {
		n, concurrency int
	}{
		{3, 80}, // one instance serves all: they share its time
		{3, 2},  // two instances
		{5, 1},  // one instance per request
	}
	for _, c := range cases {
		t.Run("concurrent requests share the instance time", func(t *testing.T) {
			a := &Activity{Function: "t2", Concurrency: c.concurrency}
			instances := float64((c.n + c.concurrency - 1) / c.concurrency)
			t0 := time.Now()
			rs := make([]*Request, c.n)
			for i := range rs {
				rs[i] = a.Begin()
			}
			t1 := time.Now()
			time.Sleep(20 * time.Millisecond)
			t2 := time.Now()
			var sum float64
			for _, r := range rs {
				sum += r.End()
			}
			t3 := time.Now()
			within(t, "sum of charges", sum, instances*ms(t2.Sub(t1)), instances*ms(t3.Sub(t0)))
			// Requests in flight together are charged equally.
			for _, r := range rs[1:] {
				if math.Abs(r.End()-rs[0].End()) > ms(t1.Sub(t0))*instances+ms(t3.Sub(t2))*instances+0.01 {
					t.Fatalf("charges %v and %v differ by more than the begin/end spread", rs[0].End(), r.End())
				}
			}
		})
	}
	t.Run("time with nothing in flight is not charged", func(t *testing.T) {
		a := &Activity{Function: "t3"}
		a.Begin().End()
		time.Sleep(20 * time.Millisecond)
		t0 := time.Now()
		r := a.Begin()
		got := r.End()
		within(t, "charge after an idle period", got, 0, ms(time.Since(t0)))
	})
}

func TestTrack(t *testing.T) {
	m := New()
	end := Track(m, "track-test", "ex1")
	time.Sleep(2 * time.Millisecond)
	end()
	got := m.Drain("ex1")
	if got[Invocations("track-test")] != 1 || got[Milliseconds("track-test")] <= 0 {
		t.Fatalf("tracked %v", got)
	}
	if ActivityOf("track-test") != ActivityOf("track-test") || ActivityOf("track-test") == ActivityOf("other") {
		t.Fatal("ActivityOf does not keep one Activity per function")
	}
}

func TestPrice(t *testing.T) {
	table := PriceTable{
		PerOp:              map[string]float64{FirestoreRead: 0.5, PubSubPublishBytes: 0.001},
		FunctionInvocation: 2, VCPUSecond: 10, GiBSecond: 4, VCPU: 1, MemoryGiB: 0.5,
	}
	lines, total := table.Price(map[string]float64{
		FirestoreRead:                   4,
		PubSubPublishBytes:              2000,
		Invocations("execute"):          3,
		Milliseconds("execute"):         1500,
		"unknown.op":                    9,
		PubSubPublish + "_not_priced_x": 1,
	})
	want := []Line{
		{"firestore", "read", 4, 2},
		{"functions", "execute.invocations", 3, 6},
		{"functions", "execute.ms", 1500, 1.5 * (10 + 0.5*4)},
		{"pubsub", "publish_bytes", 2000, 2},
		{"pubsub", "publish_not_priced_x", 1, 0},
		{"unknown", "op", 9, 0},
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("lines\n got %+v\nwant %+v", lines, want)
	}
	var sum float64
	for _, l := range lines {
		sum += l.USD
	}
	if math.Abs(total-sum) > 1e-12 || math.Abs(total-28) > 1e-12 {
		t.Fatalf("total %v, lines sum %v, want 28", total, sum)
	}
	if lines, total := Prices.Price(nil); len(lines) != 0 || total != 0 {
		t.Fatalf("empty ops priced %v %v", lines, total)
	}
	// The list prices price every operation the drivers count.
	for _, op := range []string{FirestoreRead, FirestoreWrite, FirestoreDelete, PubSubPublishBytes, PubSubDeliveryBytes, TasksCreate, TasksDispatch, TasksDelete, GCSClassA, GCSClassB} {
		if Prices.PerOp[op] <= 0 {
			t.Fatalf("no list price for %s", op)
		}
	}
}
