// Package replaytest holds the conformance suite of replay.Subscription
// (every driver and fake passes it) and Memory, the in-memory
// subscription of unit tests.
package replaytest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/replay"
)

// Memory is an in-memory replay subscription: every message published
// is kept (acknowledged or not); SeekTime marks those published before
// the time acknowledged and the others outstanding, as Pub/Sub does on a
// subscription with retain_acked_messages.
type Memory struct {
	mu   sync.Mutex
	msgs []*memMsg
	seq  int
	// Now is the publish clock (nil: time.Now).
	Now func() time.Time
}

type memMsg struct {
	m     replay.Message
	acked bool
	out   bool // delivered and not acknowledged
}

// Publish adds a message (its publish time Now()).
func (s *Memory) Publish(data []byte, attrs map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	s.seq++
	s.msgs = append(s.msgs, &memMsg{m: replay.Message{AckID: fmt.Sprint(s.seq), Data: data, Attributes: attrs, PublishTime: now}})
}

// SeekTime implements replay.Subscription.
func (s *Memory) SeekTime(_ context.Context, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		m.acked, m.out = m.m.PublishTime.Before(t), false
	}
	return nil
}

// Pull implements replay.Subscription.
func (s *Memory) Pull(_ context.Context, max int) ([]replay.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []replay.Message
	for _, m := range s.msgs {
		if len(out) == max {
			break
		}
		if !m.acked && !m.out {
			m.out = true
			out = append(out, m.m)
		}
	}
	return out, nil
}

// Ack implements replay.Subscription.
func (s *Memory) Ack(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	for _, m := range s.msgs {
		if set[m.m.AckID] {
			m.acked, m.out = true, false
		}
	}
	return nil
}

// Harness is one Subscription under test and the way to publish on its
// topic.
type Harness struct {
	Sub     replay.Subscription
	Publish func(t *testing.T, data string, attrs map[string]string)
}

// Run runs the conformance suite: a seek to a time before the messages
// delivers them all again even once acknowledged (retained), a seek to a
// time after them delivers none, and an acknowledged message is not
// delivered again until the next seek.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	drain := func() []string {
		var got []string
		for empty := 0; empty < 2; {
			ms, err := h.Sub.Pull(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				empty++
				continue
			}
			var ids []string
			for _, m := range ms {
				got = append(got, string(m.Data)+"/"+m.Attributes["k"])
				ids = append(ids, m.AckID)
				if m.PublishTime.IsZero() {
					t.Error("a message without its publish time")
				}
			}
			if err := h.Sub.Ack(ctx, ids); err != nil {
				t.Fatal(err)
			}
		}
		sort.Strings(got)
		return got
	}
	before := time.Now().Add(-time.Second)
	for i := range 3 {
		h.Publish(t, fmt.Sprint("m", i), map[string]string{"k": fmt.Sprint(i)})
	}
	want := []string{"m0/0", "m1/1", "m2/2"}
	if err := h.Sub.SeekTime(ctx, before); err != nil {
		t.Fatal(err)
	}
	if got := drain(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a seek before the messages: %v, want %v", got, want)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("acknowledged messages delivered again: %v", got)
	}
	if err := h.Sub.SeekTime(ctx, before); err != nil {
		t.Fatal(err)
	}
	if got := drain(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("acknowledged messages not retained for a second seek: %v, want %v", got, want)
	}
	if err := h.Sub.SeekTime(ctx, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("after a seek past the messages: %v, want none", got)
	}
}
