package runner

// Result grants (README "Security", "Stored results and the runner"): the
// runner holds no right to the results tier. For each attempt the control
// plane grants it exactly the objects the task may touch, as V4 signed
// URLs (shared/results/grant) that expire with the attempt:
//
//   - read: every stored result the task's rendered configuration or args
//     name (a "$ref" map or a noetl:// URN), each one authorized first
//     against the execution's ownership rule (results.Authorize: its own
//     results, its parent's and its children's);
//   - write: the object of the task's own result (the key the worker's
//     sink derives from the attempt's coordinates), for the kinds that
//     stream a table into the tier (SinkKinds).
//
// The runner reads and writes through a results.Store over those grants
// only (WithResultGrants); Cloud Storage (the stack: its signed-URL gateway)
// refuses anything else. Back in the control plane, a reference in the
// runner's answer must name an object it was granted (checkRefs).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// SinkKinds are the runner kinds that stream a table result into the tier
// (results.SinkFrom): an attempt of one of them gets a write grant.
var SinkKinds = []string{tools.KindDuckDB}

// BarrierKinds are the runner kinds that commit their side effect with a
// barrier record (tools.BarrierExecutor): a barriered attempt of one of
// them gets the grants of its result object (results.AttemptObject).
var BarrierKinds = []string{tools.KindPostgres}

// MaxReadGrants is the most stored results one attempt may name; a task
// naming more fails with a config error.
const MaxReadGrants = 64

// DefaultMaxObject is the largest object a write grant admits when the
// Granter sets none (4 GiB, NOETL_RESULT_MAX_OBJECT_MB's default).
const DefaultMaxObject int64 = 4 << 30

// ResultGrants are the result-tier objects an attempt may touch
// (Request.Results).
type ResultGrants struct {
	// Read are the stored results the task names, each with its GET grant.
	Read []ReadGrant `json:"read,omitempty"`
	// Write is the task's own result object and its PUT grant (nil: the
	// task's kind writes none).
	Write *WriteGrant `json:"write,omitempty"`
	// Attempt is the result object of a barriered attempt of a
	// BarrierKinds kind (results.AttemptObject; nil: none).
	Attempt *AttemptGrant `json:"attempt,omitempty"`
	// ReadCheck is the digest the runner's reads check: the control
	// plane's (results.Store.ReadCheck; "" is results.ReadCheckSHA256).
	ReadCheck results.ReadCheck `json:"read_check,omitempty"`
}

// ReadGrant is one stored result the task may read.
type ReadGrant struct {
	// URI is the noetl:// URN the task names it by ("" when it names it
	// by its reference only).
	URI string `json:"uri,omitempty"`
	// Ref is the reference's inner "$ref" map (uri, key, cell, bucket,
	// format, bytes, rows, sha256, crc32c), as the control plane resolved
	// it.
	Ref map[string]any `json:"ref"`
	// Grant is the signed GET of Ref's object.
	Grant grant.Grant `json:"grant"`
}

// WriteGrant is the object of the task's own result: the sink the worker
// would have used in the control plane (results.Destination), and the
// signed PUT of its key.
type WriteGrant struct {
	// Coords are the result's coordinates (tenant and project filled in).
	Coords types.ResultCoords `json:"coords"`
	// Env, Tenant, Project and ShardCount are the deployment's locator
	// settings (results.Locator): the runner derives Grant.Key from
	// Coords with them and Cell.
	Env        string `json:"env,omitempty"`
	Tenant     string `json:"tenant,omitempty"`
	Project    string `json:"project,omitempty"`
	ShardCount int    `json:"shard_count,omitempty"`
	// Cell is the result's home cell.
	Cell results.Cell `json:"cell"`
	// Limit is the result's inline budget in bytes (results.OffloadOptions
	// Limit, resolved: 0 stores any table, > 0 keeps a smaller one
	// inline); Compression, TTLSeconds and BatchRows are the output
	// block's other store settings.
	Limit       int    `json:"limit"`
	Compression string `json:"compression,omitempty"`
	TTLSeconds  int64  `json:"ttl_s,omitempty"`
	BatchRows   int    `json:"batch_rows,omitempty"`
	// IssuedAt is when the grant was signed: the runner's tier dates the
	// ttl expiry from it, so the expiry it records is the one signed.
	IssuedAt time.Time `json:"issued_at"`
	// Grant is the signed PUT of the object. It creates the object only
	// where none is (grant.IfGenerationMatchHeader "0").
	Grant grant.Grant `json:"grant"`
	// ReadBack is the signed GET of the same object: when another
	// delivery of the unit stored it first (the PUT answers 412), the
	// runner's sink reads it to take it as the result (results once.go).
	ReadBack grant.Grant `json:"read_back"`
}

// AttemptGrant is the result object of a barriered attempt
// (results.AttemptCoords): a PUT that replaces it (bounded like every
// write) and a GET.
type AttemptGrant struct {
	Put grant.Grant `json:"put"`
	Get grant.Grant `json:"get"`
}

// Granter is the control plane's side of result grants (Client.Results).
type Granter struct {
	// Store is the control plane's tier: it resolves URNs and parses
	// references before they are granted.
	Store *results.Store
	// Signer signs the grants.
	Signer *grant.Signer
	// TTL is how long a grant lives beyond the attempt's timeout
	// (≤ 0: 15 minutes).
	TTL time.Duration
	// MaxObject is the largest object in bytes one attempt may write
	// (NOETL_RESULT_MAX_OBJECT_MB; ≤ 0: DefaultMaxObject): every write
	// grant signs it as its length range.
	MaxObject int64
}

// maxObject is the Granter's object bound.
func (g *Granter) maxObject() int64 {
	if g.MaxObject > 0 {
		return g.MaxObject
	}
	return DefaultMaxObject
}

// limit resolves an inline budget as the control plane's tier would
// (results.OffloadOptions.Limit: < 0 means the tier's InlineMax).
func (g *Granter) limit(l int) int {
	if l >= 0 {
		return l
	}
	if g.Store.InlineMax > 0 {
		return g.Store.InlineMax
	}
	return results.DefaultInlineMax
}

// ttl is a grant's lifetime for an attempt with timeout timeoutS.
func (g *Granter) ttl(timeoutS float64) time.Duration {
	extra := g.TTL
	if extra <= 0 {
		extra = 15 * time.Minute
	}
	d := extra + time.Duration(timeoutS*float64(time.Second))
	return min(d, 7*24*time.Hour)
}

// Grants returns the grants of an attempt of kind (nil when it needs
// none). ctx carries the attempt's results.Reader and, for SinkKinds, the
// worker's sink factory (results.SinkFrom). Errors wrap
// results.ErrForbidden for a reference the execution may not read (the
// attempt then fails with kind forbidden before anything is sent), or
// are the resolver's and the signer's.
func (g *Granter) Grants(ctx context.Context, kind string, req tools.Request) (*ResultGrants, error) {
	if g == nil || g.Store == nil || g.Signer == nil {
		return nil, nil
	}
	named := ResultsNamed(req.Config, req.Args, inputsOf(req))
	if len(named) > MaxReadGrants {
		return nil, fmt.Errorf("%w: the task names %d stored results; at most %d", results.ErrBadRef, len(named), MaxReadGrants)
	}
	ttl := g.ttl(req.TimeoutS)
	out := &ResultGrants{ReadCheck: g.Store.ReadCheck}
	seen := map[string]bool{}
	for _, n := range named {
		rg := ReadGrant{}
		ref := n.Ref
		if n.URI != "" {
			rg.URI = n.URI
			r, err := g.Store.ResolveURN(ctx, n.URI)
			if err != nil {
				return nil, err
			}
			ref = r
		}
		if err := results.Authorize(ctx, ref); err != nil {
			return nil, err
		}
		p, err := g.Store.ParseRef(ref)
		if err != nil {
			return nil, err
		}
		inner, _ := ref[results.RefKey].(map[string]any)
		if inner == nil {
			inner = ref
		}
		rg.Ref = inner
		bucket := g.Store.BucketOf(p.Cell)
		if seen[bucket+"/"+p.Key] && rg.URI == "" {
			continue
		}
		seen[bucket+"/"+p.Key] = true
		if rg.Grant, err = g.Signer.Read(ctx, bucket, p.Key, ttl); err != nil {
			return nil, fmt.Errorf("results: sign a read of %s: %w", p.Name(), err)
		}
		out.Read = append(out.Read, rg)
	}
	if slices.Contains(SinkKinds, kind) {
		if sink, ok := results.SinkFrom(ctx); ok {
			d := sink.Destination()
			wg := &WriteGrant{Coords: d.Coords, Env: d.Locator.Env, Tenant: d.Locator.Tenant, Project: d.Locator.Project,
				ShardCount: d.Locator.ShardCount, Cell: d.Cell, Limit: g.limit(d.Options.Limit), Compression: d.Options.Compression,
				TTLSeconds: int64(d.Options.TTL / time.Second), BatchRows: d.Options.BatchRows, IssuedAt: time.Now().UTC()}
			if g.Signer.Now != nil {
				wg.IssuedAt = g.Signer.Now().UTC()
			}
			attrs := results.ObjectAttrs{ContentType: results.ContentTypeFeather, IfAbsent: true}
			if d.Options.TTL > 0 {
				attrs.Metadata = map[string]string{results.MetaExpires: expiry(wg.IssuedAt, d.Options.TTL)}
			}
			// The PUT and the read-back GET are signed at once (each is
			// an IAM signBlob call in GCP).
			var rerr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				wg.ReadBack, rerr = g.Signer.Read(ctx, d.Bucket, d.Key, ttl)
			}()
			var err error
			wg.Grant, err = g.Signer.Write(ctx, d.Bucket, d.Key, attrs, g.maxObject(), ttl)
			<-done
			if err = errors.Join(err, rerr); err != nil {
				return nil, fmt.Errorf("results: sign the write of %s: %w", d.Key, err)
			}
			out.Write = wg
		}
	}
	if slices.Contains(BarrierKinds, kind) && req.Barrier != "" {
		key, bucket := g.Store.AttemptDestination(results.AttemptCoords(req.ExecutionID, req.Step, req.Task, req.Attempt, req.Barrier))
		ag := &AttemptGrant{}
		var err error
		if ag.Put, err = g.Signer.Write(ctx, bucket, key, results.ObjectAttrs{ContentType: results.ContentTypeJSON}, g.maxObject(), ttl); err == nil {
			ag.Get, err = g.Signer.Read(ctx, bucket, key, ttl)
		}
		if err != nil {
			return nil, fmt.Errorf("results: sign the grants of the barriered attempt's result %s: %w", key, err)
		}
		out.Attempt = ag
	}
	if len(out.Read) == 0 && out.Write == nil && out.Attempt == nil {
		return nil, nil
	}
	return out, nil
}

// inputsOf returns req.Inputs as a map ResultsNamed walks.
func inputsOf(req tools.Request) map[string]any {
	if len(req.Inputs) == 0 {
		return nil
	}
	l := make([]any, len(req.Inputs))
	for i, in := range req.Inputs {
		l[i] = in
	}
	return map[string]any{"inputs": l}
}

// expiry is the MetaExpires value of a result written at t with ttl (as
// results.Store records it).
func expiry(t time.Time, ttl time.Duration) string {
	return t.Add(ttl).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// Named is a stored result a task names: by URN (URI) or by reference
// (Ref, a "$ref" map or its inner map).
type Named struct {
	URI string
	Ref map[string]any
}

// ResultsNamed returns the stored results the values name, in the order
// met: every map with a "$ref" key, and every string that is a noetl://
// URN, at any depth. A URN named twice is listed once.
func ResultsNamed(vals ...map[string]any) []Named {
	var out []Named
	uris := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if results.IsRef(x) {
				out = append(out, Named{Ref: x})
				return
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			s := strings.TrimSpace(x)
			if strings.HasPrefix(s, results.URIScheme+"://") && !uris[s] {
				uris[s] = true
				out = append(out, Named{URI: s})
			}
		}
	}
	for _, v := range vals {
		walk(v)
	}
	return out
}

// checkRefs checks that every reference in the runner's result names an
// object the attempt was granted (its write grant, or one it may read)
// or a reference its request carried (req's configuration, args and
// inputs, which the Granter authorized): a runner cannot hand the engine
// a reference to another object. The error names the first one that
// does not. The request is walked only when the result holds a
// reference outside the grants.
func checkRefs(v any, g *ResultGrants, req tools.Request) error {
	granted := func(key string) bool {
		if g == nil || key == "" {
			return false
		}
		if g.Write != nil && g.Write.Grant.Key == key {
			return true
		}
		for _, r := range g.Read {
			if r.Grant.Key == key {
				return true
			}
		}
		return false
	}
	var carried map[string]bool // the keys of the request's references, on first need
	var bad error
	var walk func(v any)
	walk = func(v any) {
		if bad != nil {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if results.IsRef(x) {
				inner, _ := x[results.RefKey].(map[string]any)
				key, _ := inner["key"].(string)
				if granted(key) {
					return
				}
				if carried == nil {
					carried = map[string]bool{}
					for _, n := range ResultsNamed(req.Config, req.Args, inputsOf(req)) {
						if in, ok := n.Ref[results.RefKey].(map[string]any); ok {
							if k, _ := in["key"].(string); k != "" {
								carried[k] = true
							}
						}
					}
				}
				if !carried[key] {
					name, _ := inner["uri"].(string)
					if name == "" {
						name = key
					}
					bad = fmt.Errorf("%w: the runner answered a reference to %q, an object this attempt was not granted", results.ErrForbidden, name)
				}
				return
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return bad
}

// WithResultGrants returns ctx with the runner's tier for one request: a results.Store
// over exactly the request's grants (grant.NewBackend), whose URNs resolve
// to the references the control plane granted, whose reader admits the
// executions of those references, and whose sink (results.WithSinks)
// writes the granted object. ctx is returned carrying the store
// (results.WithStore), the reader and the sink factory; g nil returns ctx
// unchanged.
func WithResultGrants(ctx context.Context, req Request, hc *http.Client) context.Context {
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
