package subscribe

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Pulled is a pulled message and its ack id.
type Pulled struct {
	Message
	AckID string
}

// Puller pulls batches from a Pub/Sub subscription (batch dispatch).
// Pull waits at most wait and returns what arrived (none is not an
// error); Nack makes messages available again at once.
type Puller interface {
	Pull(ctx context.Context, subscription string, max int, wait time.Duration) ([]Pulled, error)
	Ack(ctx context.Context, subscription string, ackIDs []string) error
	Nack(ctx context.Context, subscription string, ackIDs []string) error
}

// pullConcurrency bounds the messages of one batch handled at once.
const pullConcurrency = 8

// pull runs batch dispatch for reg: pulls of up to dispatch.batch_max
// messages (each waiting at most runtime.timeout_ms, capped at 10 s),
// every message handled as a push delivery would be (one execution per
// message, started together, as NoETL's POST /api/execute/batch), the
// handled ones acked and the refused ones nacked; it stops when a pull
// comes back short or PullBudget is spent. It returns the messages pulled.
func (s *Service) pull(ctx context.Context, reg *Registration) (int, error) {
	spec := reg.Spec
	sub := reg.Record.PubSubSubscription
	puller := s.Puller
	if spec.Source == SourceKafka {
		kp, err := s.kafkaPuller(ctx, reg)
		if err != nil {
			return 0, err
		}
		puller = kp
	}
	wait := min(max(time.Duration(spec.Runtime.TimeoutMS)*time.Millisecond, 100*time.Millisecond), 10*time.Second)
	budget := s.PullBudget
	if budget <= 0 {
		budget = 20 * time.Second
	}
	deadline := s.now().Add(budget)
	batch := max(spec.Dispatch.BatchMax, 1)
	total := 0
	for s.now().Before(deadline) && ctx.Err() == nil {
		msgs, err := puller.Pull(ctx, sub, batch, wait)
		if err != nil {
			return total, err
		}
		total += len(msgs)
		if len(msgs) == 0 {
			return total, nil
		}
		acks, nacks := make([]string, 0, len(msgs)), []string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, pullConcurrency)
		var firstErr error
		for _, m := range msgs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				_, err := s.Handle(ctx, reg, m.Message)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					nacks = append(nacks, m.AckID)
					if firstErr == nil && !errors.Is(err, ErrCircuitOpen) {
						firstErr = err
					}
					return
				}
				acks = append(acks, m.AckID)
			})
		}
		wg.Wait()
		if err := puller.Ack(ctx, sub, acks); err != nil {
			return total, err
		}
		if err := puller.Nack(ctx, sub, nacks); err != nil {
			return total, err
		}
		s.log().InfoContext(ctx, "subscription batch dispatched", "subscription", reg.Record.Name, "messages", len(msgs), "acked", len(acks), "nacked", len(nacks))
		if len(nacks) > 0 {
			// The control plane refuses: wait for the next tick.
			return total, firstErr
		}
		if len(msgs) < batch {
			return total, nil
		}
	}
	return total, nil
}
