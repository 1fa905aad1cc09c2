// Package gc deletes results by lifetime (README "Architecture", NoETL result storage RFC §5 "GC by
// prefix"): an execution's results live exactly as long as its record.
// It sits under shared/operations, above both stores it joins (the results
// tier and the execution records), not inside the results tier: nothing
// below it imports it (docs "Architecture": the planes and their layering).
// A sweep lists every result object of the deployment's cells, groups
// them by execution, and for each execution decides:
//
//   - a pending DLQ entry names it → keep everything (a replay reads it);
//   - its record is running → keep everything (and so are the results of
//     a finished child whose parent still runs);
//   - its record ended more than Retention ago (the record's expire_at,
//     the same setting the Firestore TTL policy and Terraform read) →
//     delete everything (per-execution prefix delete);
//   - its record is gone (removed by the TTL policy) → delete everything;
//   - otherwise keep, except objects written with output.store.ttl whose
//     expiry (results.MetaExpires) has passed.
//
// The bodies of an execution's large units (BodiesPrefix<execution>/,
// shared/tasks BodyKey, in the home cell) follow the same verdicts.
//
// The bucket's lifecycle rule stays as a backstop set longer than the
// retention (terraform/storage.tf), for objects a sweep never saw.
package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/wire"
)

// Records is what the collector reads of the engine's state: execution
// records and the DLQ (store.Store satisfies it).
type Records interface {
	ExecutionGet(ctx context.Context, id string) (*store.Execution, error)
	DLQList(ctx context.Context, status store.DLQStatus, limit int) ([]store.DLQEntry, error)
}

// Collector sweeps the results tier. Results, Records and Retention are
// required.
type Collector struct {
	Results *results.Store
	Records Records
	// Retention is how long an ended execution's record (and so its
	// results) is kept: the deployment's NOETL_RETENTION_DAYS.
	Retention time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Log receives one line per execution whose results are deleted
	// (nil: none).
	Log *slog.Logger
}

// Verdicts of a sweep, per execution.
const (
	KeepLive    = "live"    // the execution (or its parent) runs
	KeepDLQ     = "dlq"     // a pending DLQ entry names it
	KeepRecord  = "kept"    // ended, within its retention
	DeleteAged  = "expired" // ended more than Retention ago
	DeleteGone  = "orphan"  // no record any more
	DeleteTTL   = "ttl"     // objects whose output.store.ttl passed
	dlqScanSize = 100000
)

// BodiesPrefix is the prefix of the offloaded bodies of units over Cloud
// Tasks' size limit: bodies/<execution id>/<task name>.json (shared/tasks
// BodyKey; TestBodiesPrefixIsBodyKeys).
const BodiesPrefix = "bodies/"

// bodyExecution returns the execution of a body key.
func bodyExecution(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, BodiesPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "/")
	return id, ok && id != "" && id != "." && id != ".."
}

// Report is wire.GCReport (the api answers POST /gc with it).
type Report = wire.GCReport

func (c *Collector) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Run sweeps every cell. dryRun lists and decides but deletes nothing.
// A record or DLQ read that fails stops the sweep (nothing is deleted on
// a guess).
func (c *Collector) Run(ctx context.Context, dryRun bool) (Report, error) {
	rep := Report{DryRun: dryRun, Executions: map[string]int{}}
	if c.Results == nil || c.Records == nil || c.Retention <= 0 {
		return rep, errors.New("gc: Results, Records and a positive Retention are required")
	}
	held, err := c.dlqExecutions(ctx)
	if err != nil {
		return rep, err
	}
	now := c.now()
	verdicts := map[string]string{}
	home := c.Results.HomeCell()
	type pass struct {
		cell, prefix string
		b            results.Backend
		execution    func(string) (string, bool)
	}
	var passes []pass
	for cell, b := range c.Results.Backends() {
		passes = append(passes, pass{cell, c.Results.RootPrefix(), b, results.KeyExecution})
		if cell == home {
			passes = append(passes, pass{cell, BodiesPrefix, b, bodyExecution})
		}
	}
	for _, p := range passes {
		cell, b := p.cell, p.b
		var doomed []results.ObjectInfo
		err := b.List(ctx, p.prefix, func(o results.ObjectInfo) error {
			rep.Objects++
			rep.Bytes += o.Size
			id, ok := p.execution(o.Key)
			if !ok {
				return nil // not a result object: left to the lifecycle rule
			}
			v, seen := verdicts[id]
			if !seen {
				var err error
				if v, err = c.decide(ctx, id, held, now); err != nil {
					return err
				}
				verdicts[id] = v
				rep.Executions[v]++
				if (v == DeleteAged || v == DeleteGone) && len(rep.DeletedExecutions) < 1000 {
					rep.DeletedExecutions = append(rep.DeletedExecutions, id)
					if c.Log != nil {
						c.Log.InfoContext(ctx, "gc: deleting the results of an execution", "execution_id", id, "reason", v, "cell", cell, "dry_run", dryRun)
					}
				}
			}
			switch {
			case v == DeleteAged || v == DeleteGone:
			case v == KeepRecord && expired(o, now):
				rep.Executions[DeleteTTL]++
			default:
				return nil
			}
			doomed = append(doomed, o)
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("gc: cell %s: %w", cell, err)
		}
		for _, o := range doomed {
			if !dryRun {
				if err := b.Delete(ctx, o.Key); err != nil {
					return rep, fmt.Errorf("gc: cell %s: %w", cell, err)
				}
			}
			rep.Deleted++
			rep.DeletedBytes += o.Size
		}
	}
	return rep, nil
}

// expired reports whether an object's output.store.ttl passed.
func expired(o results.ObjectInfo, now time.Time) bool {
	s, ok := o.Attrs.Metadata[results.MetaExpires]
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, s)
	return err == nil && !t.After(now)
}

// dlqExecutions is the set of executions named by pending DLQ entries.
func (c *Collector) dlqExecutions(ctx context.Context) (map[string]bool, error) {
	es, err := c.Records.DLQList(ctx, store.DLQPending, dlqScanSize)
	if err != nil {
		return nil, fmt.Errorf("gc: read the DLQ: %w", err)
	}
	out := map[string]bool{}
	for _, e := range es {
		if e.ExecutionID != "" {
			out[e.ExecutionID] = true
		}
	}
	return out, nil
}

// Decide returns the verdict for one execution's results (see the package
// documentation).
func (c *Collector) Decide(ctx context.Context, id string) (string, error) {
	held, err := c.dlqExecutions(ctx)
	if err != nil {
		return "", err
	}
	return c.decide(ctx, id, held, c.now())
}

func (c *Collector) decide(ctx context.Context, id string, held map[string]bool, now time.Time) (string, error) {
	if held[id] {
		return KeepDLQ, nil
	}
	rec, err := c.Records.ExecutionGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return DeleteGone, nil
	}
	if err != nil {
		return "", fmt.Errorf("gc: read execution %s: %w", id, err)
	}
	if !rec.State.Terminal() {
		return KeepLive, nil
	}
	if p := rec.State.ParentID; p != "" {
		if held[p] {
			return KeepDLQ, nil
		}
		prec, err := c.Records.ExecutionGet(ctx, p)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("gc: read execution %s: %w", p, err)
		}
		if err == nil && !prec.State.Terminal() {
			return KeepLive, nil // its parent may still read it
		}
	}
	// The record's expire_at is its last write (its end) + Retention.
	if ended := rec.State.FinishedAt; !ended.IsZero() && !ended.Add(c.Retention).After(now) {
		return DeleteAged, nil
	}
	return KeepRecord, nil
}

// DeleteExecution deletes one execution's results now (per-execution
// prefix delete) if the sweep's rules allow it (its verdict deletes), or,
// with force, also when it ended within its retention (an operator
// removing an execution's data early). The results of a running
// execution, of a child whose parent runs, and of an execution a pending
// DLQ entry names are never deleted, force or not. It returns the verdict
// and the objects deleted.
func (c *Collector) DeleteExecution(ctx context.Context, id string, force bool) (string, int, error) {
	v, err := c.Decide(ctx, id)
	if err != nil {
		return "", 0, err
	}
	if v == KeepLive || v == KeepDLQ || (!force && v == KeepRecord) {
		return v, 0, nil
	}
	n, err := c.Results.DeleteExecution(ctx, "", "", id)
	if err != nil {
		return v, n, err
	}
	m, err := c.Results.DeletePrefix(ctx, c.Results.HomeCell(), BodiesPrefix+id+"/")
	return v, n + m, err
}
