// Package rerun starts a rerun of an ended execution (POST
// /executions/{id}/rerun, `noetl rerun`, the console's rerun buttons;
// docs "Rerun"): a new execution, linked to its source by rerun_of, that
// reuses the recorded ends of the source's step runs before its start
// instead of running them again, and runs the rest.
//
// The decisions are the engine's (engine.PlanRerun: which step run the
// rerun starts from, which runs it reuses, what is refused and why; the
// reused runs become step.done events with reused_from when the rerun
// schedules them). This package does the I/O around them, in order:
//
//  1. read the source's event log (the caller read the execution and
//     checked that its caller may read it);
//  2. plan on the playbook the rerun runs (the source's frozen playbook,
//     or a fixed one the caller gives);
//  3. copy every stored result the reused runs name (results, ctx and
//     step-scope values) to the rerun's own execution id, ownership- and
//     digest-checked (results.Store.CopyRefs with the source as reader):
//     the rerun owns its results, and the source may be deleted after;
//  4. fit the plan in the execution document (the largest inline reused
//     results move to the results tier, as control.FitState does);
//  5. launch it (launch.Start: grants, keychain, the request event
//     carrying rerun_of and rerun_from), with the source's recorded
//     workload deep-merged with the request's.
package rerun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Copier copies stored results to another execution and stores a value
// in the results tier whatever its size (results.Store implements it).
type Copier interface {
	CopyRefs(ctx context.Context, v any, to string) (any, results.CopyStats, error)
	OffloadForced(ctx context.Context, c types.ResultCoords, v any) (any, error)
}

// Starter starts reruns. Store, Bus and Results are required;
// Credentials as for launch.Start.
type Starter struct {
	Store       store.Store
	Bus         bus.Publisher
	Results     Copier
	Credentials credentials.Store
}

// Params is one rerun to start.
type Params struct {
	// Source is the execution to rerun, as the caller read it (after
	// checking its caller may read it).
	Source *store.Execution
	// From is where the rerun starts: "" or the entry step (nothing
	// reused), engine.RerunFailed, or a step's name.
	From string
	// Workload is deep-merged over the source's recorded workload.
	Workload map[string]any
	// Playbook is the playbook the rerun runs, with its source text
	// PlaybookSource and its catalog path (credential grants match it;
	// "" for an inline playbook). Nil: the source's playbook as it was
	// frozen at its start, with its catalog path.
	Playbook       *dsl.Playbook
	PlaybookSource []byte
	CatalogPath    string
	// Creator is the principal starting the rerun.
	Creator string
	Now     time.Time
}

// Started describes a started rerun.
type Started struct {
	ExecutionID string `json:"execution_id"`
	RerunOf     string `json:"rerun_of"`
	// From is the start as asked; Step and Run the step run it starts
	// from ("" and 0: the start).
	From string `json:"from"`
	Step string `json:"step,omitempty"`
	Run  int    `json:"run,omitempty"`
	// Reused are the reused step runs, "step#run" sorted.
	Reused []string `json:"reused"`
	// CopiedObjects and CopiedBytes count the stored results copied to
	// the rerun.
	CopiedObjects int   `json:"copied_objects"`
	CopiedBytes   int64 `json:"copied_bytes"`
}

// Start plans, prepares and launches a rerun (see the package comment).
// Errors: *engine.RerunError (refused: the reason says why);
// *dsl.ValidationError or a load error of the source's frozen playbook;
// results errors of the copy (ErrForbidden, ErrLost: a reused result the
// source may not read or that is gone); control.ErrTooLarge-like
// *TooLargeError when the plan cannot fit an execution document; the
// errors of launch.Start (grants, keychain); store and bus errors.
func (s *Starter) Start(ctx context.Context, p Params) (*Started, error) {
	src := p.Source
	if src == nil || src.State == nil {
		return nil, errors.New("rerun: no source execution")
	}
	id := src.State.ExecutionID
	if src.State.ParentID != "" {
		return nil, &engine.RerunError{Reason: fmt.Sprintf("execution %s is a child of execution %s (a kind: playbook step): its inputs come from its parent's run, so it is not rerun on its own; rerun execution %s", id, src.State.ParentID, src.State.ParentID)}
	}
	pb, text, path := p.Playbook, p.PlaybookSource, p.CatalogPath
	var files map[string]store.ExecutionFile
	if pb == nil {
		var err error
		if pb, err = dsl.Load([]byte(src.Source), "execution "+id); err != nil {
			return nil, fmt.Errorf("rerun: the playbook of execution %s no longer loads: %w", id, err)
		}
		// The same playbook: the script files sent beside it come along.
		text, path, files = []byte(src.Source), src.State.CatalogPath, src.Files
	}
	evs, err := s.Store.EventList(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rerun: read the events of %s: %w", id, err)
	}
	plan, err := engine.PlanRerun(pb, src.State, evs, p.From)
	if err != nil {
		return nil, err
	}
	newID := launch.NewID()
	// The reused values' stored results become the rerun's: read as the
	// source reads them (its own, its parent's, its children's).
	rctx := results.WithReader(ctx, results.Reader{Execution: id, Parent: src.State.ParentID, IsChild: func(ctx context.Context, child string) (bool, error) {
		rec, err := s.Store.ExecutionGet(ctx, child)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return rec.State.ParentID == id, nil
	}})
	out := &Started{RerunOf: id, From: p.From, Step: plan.Step, Run: plan.Run, Reused: plan.Reused()}
	for _, key := range sortedKeys(plan.Reuse) {
		r := plan.Reuse[key]
		if r.Result, err = s.copy(rctx, r.Result, newID, out); err != nil {
			return nil, fmt.Errorf("rerun: the result of %s#%d: %w", r.Step, r.Run, err)
		}
		for _, m := range []*map[string]any{&r.Ctx, &r.Vars} {
			if *m == nil {
				continue
			}
			v, err := s.copy(rctx, *m, newID, out)
			if err != nil {
				return nil, fmt.Errorf("rerun: the ctx or step scope of %s#%d: %w", r.Step, r.Run, err)
			}
			*m, _ = v.(map[string]any)
		}
	}
	wl, _ := launch.DeepMerge(jsonx.Clone(src.State.Workload), jsonx.NormalizeMap(p.Workload)).(map[string]any)
	if err := s.fit(ctx, newID, text, wl, plan.Reuse); err != nil {
		return nil, err
	}
	if _, err := launch.Start(ctx, s.Store, s.Bus, launch.Params{Playbook: pb, Source: text, Files: files, Workload: wl, Credentials: s.Credentials,
		Creator: p.Creator, CatalogPath: path, ExecutionID: newID, RerunOf: id, RerunFrom: p.From, Reuse: plan.Reuse, Now: p.Now}); err != nil {
		return nil, err
	}
	out.ExecutionID = newID
	return out, nil
}

// copy copies the stored results v names to execution to, counting them.
func (s *Starter) copy(ctx context.Context, v any, to string, out *Started) (any, error) {
	c, st, err := s.Results.CopyRefs(ctx, v, to)
	out.CopiedObjects += st.Objects
	out.CopiedBytes += st.Bytes
	return c, err
}

// TooLargeError refuses a rerun whose plan does not fit an execution
// document even with its reused results in the results tier (its ctx or
// step-scope values are too large).
type TooLargeError struct{ Size, Limit int }

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("rerun: the playbook, workload and reused step runs (and the events that reuse them at once) take %d bytes, over the %d-byte limit of a Firestore document: rerun from a later step, or pass large values by reference", e.Size, e.Limit)
}

// EventOverhead is what the events of one reused step run weigh in the
// transition that reuses it, besides the run's own values (step.scheduled,
// step.started, step.done and next.evaluated envelopes), in bytes: the
// estimate that keeps that transition's outbox under Firestore's 1 MiB.
const EventOverhead = 1600

// fit keeps the rerun's execution document, and the outbox of its first
// transition (which reuses the runs at once, one step.done each with its
// values), under control.StateMaxBytes: the largest inline reused results
// move to the results tier (stored for execution id) until both fit.
func (s *Starter) fit(ctx context.Context, id string, source []byte, wl map[string]any, reuse map[string]*engine.ReusedRun) error {
	size := func() int {
		b, _ := json.Marshal(map[string]any{"workload": wl, "reuse": reuse})
		return max(len(b)+len(source), outboxEstimate(reuse))
	}
	n := size()
	if n <= control.StateMaxBytes {
		return nil
	}
	type entry struct {
		key  string
		size int
	}
	var big []entry
	for k, r := range reuse {
		if results.IsRef(r.Result) {
			continue
		}
		b, _ := json.Marshal(r.Result)
		big = append(big, entry{k, len(b)})
	}
	sort.Slice(big, func(i, j int) bool {
		return big[i].size > big[j].size || big[i].size == big[j].size && big[i].key < big[j].key
	})
	for _, e := range big {
		if n <= control.StateMaxBytes || e.size < 64 {
			break
		}
		r := reuse[e.key]
		ref, err := s.Results.OffloadForced(ctx, types.ResultCoords{ExecutionID: id, Step: r.Step, Frame: r.Run}, r.Result)
		if err != nil {
			return fmt.Errorf("rerun: store the reused result of %s#%d: %w", r.Step, r.Run, err)
		}
		if ref != nil {
			r.Result = ref
			n = size()
		}
	}
	if n > control.StateMaxBytes {
		return &TooLargeError{Size: n, Limit: control.StateMaxBytes}
	}
	return nil
}

// outboxEstimate is the size of the transition that reuses the runs:
// each run's values (its args appear in step.scheduled, its result, ctx
// and step scope in step.done) and EventOverhead.
func outboxEstimate(reuse map[string]*engine.ReusedRun) int {
	n := 0
	for _, r := range reuse {
		b, _ := json.Marshal(r)
		a, _ := json.Marshal(r.Args)
		n += len(b) + len(a) + EventOverhead
	}
	return n
}

func sortedKeys(m map[string]*engine.ReusedRun) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
