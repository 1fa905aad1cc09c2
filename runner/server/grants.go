package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"net/http"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
)

// WithResultGrants returns ctx with the runner's tier for one request: a results.Store
// over exactly the request's grants (grant.NewBackend), whose URNs resolve
// to the references the control plane granted, whose reader admits the
// executions of those references, and whose sink (results.WithSinks)
// writes the granted object. ctx is returned carrying the store
// (results.WithStore), the reader and the sink factory; g nil returns ctx
// unchanged.
func WithResultGrants(ctx context.Context, req runnerproto.Request, hc *http.Client) context.Context {
	g := req.Results
	if g == nil {
		return ctx
	}
	var all []grant.Grant
	uris := map[string]map[string]any{}
	execs := map[string]bool{}
	cells := []results.Cell{}
	addCell := func(c results.Cell) {
		for _, have := range cells {
			if have.Name == c.Name {
				return
			}
		}
		cells = append(cells, c)
	}
	for _, r := range g.Read {
		all = append(all, r.Grant)
		ref := map[string]any{results.RefKey: r.Ref}
		if r.URI != "" {
			uris[r.URI] = ref
		}
		if u, _ := r.Ref["uri"].(string); u != "" {
			uris[u] = ref
		}
		if id, err := results.RefExecution(r.Ref); err == nil {
			execs[id] = true
		}
		if c, _ := r.Ref["cell"].(string); c != "" {
			addCell(results.Cell{Name: c, Bucket: r.Grant.Bucket})
		}
	}
	st := &results.Store{ReadCheck: g.ReadCheck}
	if a := g.Attempt; a != nil {
		all = append(all, a.Put, a.Get)
	}
	if w := g.Write; w != nil {
		all = append(all, w.Grant)
		if w.ReadBack.URL != "" {
			all = append(all, w.ReadBack)
		}
		addCell(w.Cell)
		issued := w.IssuedAt
		st.Now = func() time.Time { return issued }
		st.Locator = results.Locator{Env: w.Env, Tenant: w.Tenant, Project: w.Project, ShardCount: w.ShardCount}
	}
	home := ""
	if g.Write != nil {
		home = g.Write.Cell.Name
	} else if len(cells) > 0 {
		home = cells[0].Name
	}
	if len(cells) > 0 {
		st.Cells = &results.CellMap{Cells: cells, Placements: []results.Placement{{Cell: home}}}
	}
	st.Backend = &grantedBackend{Backend: grant.NewBackend(all, hc), uris: uris, quota: quotaFrom(ctx)}
	if a := g.Attempt; a != nil {
		ctx = results.WithAttemptObject(ctx, attemptObject{b: st.Backend, key: a.Put.Key})
	}
	ctx = results.WithStore(ctx, st)
	ctx = results.WithReader(ctx, results.Reader{Execution: req.ExecutionID,
		IsChild: func(_ context.Context, id string) (bool, error) { return execs[id], nil }})
	if w := g.Write; w != nil {
		opts := results.OffloadOptions{Limit: w.Limit, Compression: w.Compression,
			TTL: time.Duration(w.TTLSeconds) * time.Second, BatchRows: w.BatchRows}
		c := w.Coords
		ctx = results.WithSinks(ctx, func() *results.Sink { return st.NewSink(ctx, c, opts) })
	}
	return ctx
}

// grantedBackend is the runner's backend of granted objects, resolving
// the URNs the control plane resolved (results.URNResolver); a write over
// the grant's quota is noted in quota (the attempt then fails with kind
// limit, whatever its kind made of the error).
type grantedBackend struct {
	results.Backend
	uris  map[string]map[string]any
	quota *quotaHit
}

// quotaHit records that an attempt's write ran into the result tier's
// quota (results.ErrQuota).
type quotaHit struct {
	mu  sync.Mutex
	err error
}

func (q *quotaHit) note(err error) {
	if q != nil && errors.Is(err, results.ErrQuota) {
		q.mu.Lock()
		if q.err == nil {
			q.err = err
		}
		q.mu.Unlock()
	}
}

// hit returns the first quota error noted, or nil.
func (q *quotaHit) hit() error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

type quotaKey struct{}

// withQuota returns ctx carrying a new quotaHit (the Handler's, per
// request).
func withQuota(ctx context.Context) (context.Context, *quotaHit) {
	q := &quotaHit{}
	return context.WithValue(ctx, quotaKey{}, q), q
}

func quotaFrom(ctx context.Context) *quotaHit {
	q, _ := ctx.Value(quotaKey{}).(*quotaHit)
	return q
}

// Put implements results.Backend, noting a quota refusal.
func (b *grantedBackend) Put(ctx context.Context, key string, data []byte, contentType string) error {
	err := b.Backend.Put(ctx, key, data, contentType)
	b.quota.note(err)
	return err
}

// NewWriter implements results.Backend, noting a quota refusal.
func (b *grantedBackend) NewWriter(ctx context.Context, key string, a results.ObjectAttrs) results.ObjectWriter {
	return &quotaWriter{ObjectWriter: b.Backend.NewWriter(ctx, key, a), q: b.quota}
}

type quotaWriter struct {
	results.ObjectWriter
	q *quotaHit
}

func (w *quotaWriter) Write(p []byte) (int, error) {
	n, err := w.ObjectWriter.Write(p)
	w.q.note(err)
	return n, err
}

func (w *quotaWriter) Close() error {
	err := w.ObjectWriter.Close()
	w.q.note(err)
	return err
}

// ResolveURN implements results.URNResolver: a URN the task was granted
// resolves to the granted reference; any other is refused.
func (b *grantedBackend) ResolveURN(_ context.Context, uri string) (map[string]any, error) {
	if r, ok := b.uris[uri]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("%w: %s was not granted to this task (the control plane grants the stored results a task's configuration names)", results.ErrForbidden, uri)
}

// attemptObject is a barriered attempt's result object over its grants.
type attemptObject struct {
	b   results.Backend
	key string
}

// Put implements results.AttemptObject.
func (o attemptObject) Put(ctx context.Context, data []byte) error {
	return o.b.Put(ctx, o.key, data, results.ContentTypeJSON)
}

// Get implements results.AttemptObject.
func (o attemptObject) Get(ctx context.Context) ([]byte, error) { return o.b.Get(ctx, o.key) }
