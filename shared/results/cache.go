package results

import (
	"container/list"
	"context"
	"reflect"
	"sync"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// Cache keeps values loaded from the tier (whole results, a table's
// record batches) in memory, bounded in bytes and evicted least recently
// used first (README "Architecture": a per-instance cache, never unbounded). Sizes are
// estimates of the decoded values (SizeOf). Hits, misses and evictions are
// counted (noetl_result_cache_hits_total, _misses_total,
// _evictions_total) and the bytes held are an up-down counter
// (noetl_result_cache_bytes). Values are shared with every caller: they
// must not be modified. Safe for concurrent use; a nil *Cache caches
// nothing.
type Cache struct {
	max int64

	mu   sync.Mutex
	ll   *list.List // front = most recently used
	m    map[string]*list.Element
	size int64
}

type cacheEntry struct {
	key  string
	v    any
	size int64
}

// NewCache returns a cache holding at most maxBytes (≤ 0: caches
// nothing).
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

// Get returns the value cached under key.
func (c *Cache) Get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.m[key]
	if ok {
		c.ll.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		telemetry.M.ResultCacheMiss(context.Background())
		return nil, false
	}
	telemetry.M.ResultCacheHit(context.Background())
	return e.Value.(*cacheEntry).v, true
}

// Put caches v of the given size under key, evicting the least recently
// used entries until it fits; a value larger than the cache is not kept.
func (c *Cache) Put(key string, v any, size int64) {
	if c == nil || size > c.max {
		return
	}
	evicted := 0
	c.mu.Lock()
	before := c.size
	if e, ok := c.m[key]; ok {
		c.size -= e.Value.(*cacheEntry).size
		c.ll.Remove(e)
		delete(c.m, key)
	}
	for c.size+size > c.max && c.ll.Len() > 0 {
		last := c.ll.Back()
		ent := last.Value.(*cacheEntry)
		c.ll.Remove(last)
		delete(c.m, ent.key)
		c.size -= ent.size
		evicted++
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key: key, v: v, size: size})
	c.size += size
	delta := c.size - before
	c.mu.Unlock()
	if evicted > 0 {
		telemetry.M.ResultCacheEvicted(context.Background(), int64(evicted))
	}
	telemetry.M.ResultCacheBytes(context.Background(), delta)
}

// Bytes is the estimated size of what the cache holds.
func (c *Cache) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Len is the number of entries.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// SizeOf estimates the memory a decoded value holds, in bytes: strings
// their length plus a header, maps and lists their entries plus
// per-entry overhead, scalars 16. It walks the whole value.
func SizeOf(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 16
	case string:
		return 16 + int64(len(x))
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 16 + int64(len(k)) + 16 + SizeOf(e)
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range x {
			n += SizeOf(e)
		}
		return n
	case []map[string]any:
		n := int64(24)
		for _, e := range x {
			n += SizeOf(e)
		}
		return n
	case bool, int, int64, float64, int32, float32, uint64:
		return 16
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		return 24 + int64(rv.Len())*16
	}
	return 16
}
