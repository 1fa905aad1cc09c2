package runnerclient

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
	"github.com/noetl/gcpengine/shared/runnerproto"
	"slices"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/tools"
)

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
	return runnerproto.DefaultMaxObject
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
func (g *Granter) Grants(ctx context.Context, kind string, req tools.Request) (*runnerproto.ResultGrants, error) {
	if g == nil || g.Store == nil || g.Signer == nil {
		return nil, nil
	}
	named := ResultsNamed(req.Config, req.Args, inputsOf(req))
	if len(named) > runnerproto.MaxReadGrants {
		return nil, fmt.Errorf("%w: the task names %d stored results; at most %d", results.ErrBadRef, len(named), runnerproto.MaxReadGrants)
	}
	ttl := g.ttl(req.TimeoutS)
	out := &runnerproto.ResultGrants{ReadCheck: g.Store.ReadCheck}
	seen := map[string]bool{}
	for _, n := range named {
		rg := runnerproto.ReadGrant{}
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
	if slices.Contains(runnerproto.SinkKinds, kind) {
		if sink, ok := results.SinkFrom(ctx); ok {
			d := sink.Destination()
			wg := &runnerproto.WriteGrant{Coords: d.Coords, Env: d.Locator.Env, Tenant: d.Locator.Tenant, Project: d.Locator.Project,
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
	if slices.Contains(runnerproto.BarrierKinds, kind) && req.Barrier != "" {
		key, bucket := g.Store.AttemptDestination(results.AttemptCoords(req.ExecutionID, req.Step, req.Task, req.Attempt, req.Barrier))
		ag := &runnerproto.AttemptGrant{}
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
func checkRefs(v any, g *runnerproto.ResultGrants, req tools.Request) error {
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
