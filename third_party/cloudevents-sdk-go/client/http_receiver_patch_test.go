/*
 Copyright 2026 The CloudEvents Authors
 SPDX-License-Identifier: Apache-2.0
*/

package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	thttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

type reqIDKey struct{}

// TestEventReceiverCanceledRequestsDoNotWedge is the regression test of
// the noetl patch (PATCHES.md; cloudevents/sdk-go#1224, #1332): requests
// canceled while others are in flight must not leave the receiver wedged,
// and every handler runs with its own request's context.
func TestEventReceiverCanceledRequestsDoNotWedge(t *testing.T) {
	p, err := thttp.New()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	mismatch := 0
	h, err := NewHTTPReceiveHandler(context.Background(), p, func(ctx context.Context, e event.Event) error {
		if id, _ := ctx.Value(reqIDKey{}).(string); id != e.ID() {
			mu.Lock()
			mismatch++
			mu.Unlock()
		}
		if e.Type() == "slow" {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reqIDKey{}, r.Header.Get("Ce-Id"))))
	}))
	defer func() {
		if !t.Failed() { // Close waits for every request: a wedged one never ends
			srv.Close()
		}
	}()
	post := func(ctx context.Context, id, typ string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader([]byte("{}")))
		req.Header.Set("Ce-Id", id)
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Type", typ)
		req.Header.Set("Ce-Source", "test")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	// Requests whose client is gone before the hand-over: upstream, each
	// one's consumer returns on ctx.Done() and its send is orphaned.
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte("{}"))).WithContext(context.WithValue(ctx, reqIDKey{}, fmt.Sprintf("gone%d", i)))
		req.Header.Set("Ce-Id", fmt.Sprintf("gone%d", i))
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Type", "fast")
		req.Header.Set("Ce-Source", "test")
		req.Header.Set("Content-Type", "application/json")
		go h.ServeHTTP(httptest.NewRecorder(), req)
	}
	time.Sleep(50 * time.Millisecond)
	// Many concurrent requests, a third of them canceled mid-flight.
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i%3)*time.Millisecond)
			if i%3 != 0 {
				ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
			}
			defer cancel()
			typ := "fast"
			if i%3 == 0 {
				typ = "slow"
			}
			_ = post(ctx, fmt.Sprintf("r%d", i), typ)
		}(i)
	}
	wg.Wait()
	// The receiver still answers each request on its own.
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := post(ctx, fmt.Sprintf("after%d", i), "fast")
		cancel()
		if err != nil {
			t.Fatalf("request %d after the cancellations: %v (the receiver is wedged)", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if mismatch != 0 {
		t.Fatalf("%d handlers ran under another request's context", mismatch)
	}
}
