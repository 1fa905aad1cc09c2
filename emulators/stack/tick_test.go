package stack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTickerPostsOneAtATime: the ticker POSTs its URL every interval and
// never overlaps calls; it stops with its context.
func TestTickerPostsOneAtATime(t *testing.T) {
	var calls, starts, inFlight, overlap atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/subscribe/tick" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		starts.Add(1)
		if inFlight.Add(1) > 1 {
			overlap.Add(1)
		}
		time.Sleep(30 * time.Millisecond) // slower than the interval
		inFlight.Add(-1)
		calls.Add(1)
		if calls.Load() == 2 {
			w.WriteHeader(http.StatusServiceUnavailable) // a failure does not stop it
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		(&Ticker{URL: srv.URL + "/subscribe/tick", Every: 10 * time.Millisecond}).Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if calls.Load() < 4 || overlap.Load() != 0 {
		t.Fatalf("calls %d, overlapping %d; want at least 4 and none overlapping", calls.Load(), overlap.Load())
	}
	n := starts.Load()
	time.Sleep(50 * time.Millisecond)
	if starts.Load() != n {
		t.Error("the ticker kept calling after its context ended")
	}
}
