package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/store"
)

// SubscriptionPut implements store.Store.
func (m *Memory) SubscriptionPut(ctx context.Context, p store.SubscriptionPutParams) (*store.Subscription, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subs == nil {
		m.subs = map[string]store.Subscription{}
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // Firestore keeps microseconds
	gen, created := 1, now
	if old, ok := m.subs[p.Name]; ok {
		gen, created = old.Generation+1, old.CreatedAt
	}
	s := p.Record(gen, created, now)
	m.subs[p.Name] = s
	return &s, nil
}

// SubscriptionGet implements store.Store.
func (m *Memory) SubscriptionGet(ctx context.Context, name string) (*store.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &s, nil
}

// SubscriptionList implements store.Store.
func (m *Memory) SubscriptionList(ctx context.Context) ([]store.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Subscription{}
	for _, s := range m.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SubscriptionDelete implements store.Store.
func (m *Memory) SubscriptionDelete(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[name]; !ok {
		return store.ErrNotFound
	}
	delete(m.subs, name)
	return nil
}
