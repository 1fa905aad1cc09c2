package credentials

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Memory is an in-process Store for unit tests. Data is kept as JSON text,
// so values come back exactly as from the Firestore backend. The zero
// value is not usable; call NewMemory.
type Memory struct {
	// Now replaces time.Now for the timestamps when set.
	Now func() time.Time

	mu    sync.Mutex
	items map[string]memItem
}

type memItem struct {
	c    Credential // without Data
	data string
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{items: map[string]memItem{}} }

// CredentialPut implements Store.
func (m *Memory) CredentialPut(ctx context.Context, c Credential) error {
	c, data, err := Prepare(c)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := StoreNow(m.Now)
	m.mu.Lock()
	defer m.mu.Unlock()
	c.CreatedAt, c.UpdatedAt = now, now
	if old, ok := m.items[c.Name]; ok {
		c.CreatedAt = old.c.CreatedAt
	}
	c.Data = nil
	c.Grants = GrantsOrEmpty(c.Grants)
	m.items[c.Name] = memItem{c: c, data: data}
	return nil
}

// CredentialGet implements Store.
func (m *Memory) CredentialGet(ctx context.Context, name string) (*Credential, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	it, ok := m.items[name]
	m.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	data, err := DecodeData(name, it.data)
	if err != nil {
		return nil, err
	}
	c := it.c
	c.Data = data
	c.Grants = GrantsOrEmpty(c.Grants)
	return &c, nil
}

// CredentialInfo implements Store.
func (m *Memory) CredentialInfo(ctx context.Context, name string) (*Summary, error) {
	c, err := m.CredentialGet(ctx, name)
	if err != nil {
		return nil, err
	}
	s := c.Summary()
	return &s, nil
}

// CredentialList implements Store.
func (m *Memory) CredentialList(ctx context.Context) ([]Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Summary, 0, len(m.items))
	for name, it := range m.items {
		data, err := DecodeData(name, it.data)
		if err != nil {
			return nil, err
		}
		c := it.c
		c.Data = data
		out = append(out, c.Summary())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CredentialDelete implements Store.
func (m *Memory) CredentialDelete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[name]; !ok {
		return ErrNotFound
	}
	delete(m.items, name)
	return nil
}
