package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/bus/pubsubbus"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/tasks/cloudtasks"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
	"github.com/noetl/gcpengine/shared/types"
)

type kindTool struct{}

func (kindTool) Run(context.Context, tools.Request) types.Outcome {
	return types.Outcome{Status: types.StatusOK}
}

// TestLatencyProfileWrapsTheContracts: NOETL_LATENCY_PROFILE=gcp puts the
// store, bus and task creator of every control plane and of the worker,
// the results tier's backend and the runner kinds' tools behind the
// latency decorators (shared/latency), and leaves the control plane's own
// kinds alone, and Deps.Tasks (dispatch's bulk fan-out) is the wrapped
// creator; off (the default) wraps nothing.
func TestLatencyProfileWrapsTheContracts(t *testing.T) {
	build := func(profile string) *Deps {
		t.Setenv("NOETL_LATENCY_PROFILE", profile)
		cfg, err := config.LoadE()
		if err != nil {
			t.Fatal(err)
		}
		base := testConfig()
		base.LatencyProfile = cfg.LatencyProfile
		r := &recorder{}
		b := r.builders()
		b.Results = func(context.Context, config.Config) (*results.Store, func(), error) {
			return &results.Store{Backend: results.NewMemoryBucket("results")}, nil, nil
		}
		b.Tools = func(controlkinds.Options) (tools.Registry, func()) { return tools.Registry{"noop": kindTool{}}, nil }
		b.Runner = func(config.Config, credentials.Store, *results.Store, *slog.Logger) tools.Registry {
			return tools.Registry{"python": kindTool{}}
		}
		d, err := NewDeps(context.Background(), base, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Ensure(context.Background(), NeedExecutor|NeedControl|NeedRouter); err != nil {
			t.Fatal(err)
		}
		return d
	}
	type plainness struct{ store, bus, tasks, backend, runnerTool, controlTool bool }
	look := func(d *Deps) []plainness {
		var out []plainness
		for _, cp := range []*struct {
			s  store.Store
			b  bus.Publisher
			tc tasks.Creator
		}{{d.Control.Store, d.Control.Bus, d.Control.Tasks}, {d.Router.Control.Store, d.Router.Control.Bus, d.Router.Control.Tasks},
			{d.Worker.Control.Store, d.Worker.Control.Bus, d.Worker.Control.Tasks}, {d.Worker.Store, d.Worker.Bus, d.Dispatcher}} {
			_, ps := cp.s.(*firestorestore.Firestore)
			_, pb := cp.b.(*pubsubbus.PubSub)
			_, pt := cp.tc.(*cloudtasks.Dispatcher)
			_, pr := d.Worker.Tools["python"].(kindTool)
			_, pc := d.Worker.Tools["noop"].(kindTool)
			out = append(out, plainness{store: ps, bus: pb, tasks: pt, backend: isMem(d.Results.Backend), runnerTool: pr, controlTool: pc})
		}
		return out
	}
	for i, p := range look(build("off")) {
		if p != (plainness{true, true, true, true, true, true}) {
			t.Errorf("profile off, plane %d: %+v: something is wrapped", i, p)
		}
	}
	if _, plain := build("off").Tasks().(*cloudtasks.Dispatcher); !plain {
		t.Error("profile off: Deps.Tasks is not the dispatcher itself")
	}
	d := build("gcp")
	if _, plain := d.Tasks().(*cloudtasks.Dispatcher); plain {
		t.Error("profile gcp: Deps.Tasks (dispatch's fan-out) is not wrapped")
	}
	for i, p := range look(d)[:3] {
		if p != (plainness{controlTool: true}) {
			t.Errorf("profile gcp, plane %d: %+v: want store, bus, tasks, backend and the runner kinds wrapped, the control kinds not", i, p)
		}
	}
	if _, plain := d.Worker.Store.(*firestorestore.Firestore); plain {
		t.Error("profile gcp: the worker's own store is not wrapped")
	}
	if bn, ok := d.Results.Backend.(results.BucketNamer); !ok || bn.Bucket() != "results" {
		t.Error("profile gcp: the wrapped results backend lost its bucket name")
	}
	// A second Ensure wraps nothing twice.
	before := d.Results.Backend
	if err := d.Ensure(context.Background(), NeedExecutor); err != nil || d.Results.Backend != before {
		t.Errorf("a second Ensure rewrapped the backend (err %v)", err)
	}
}

// isMem reports whether b is the memory backend itself (not a decorator).
func isMem(b results.Backend) bool { return fmt.Sprintf("%T", b) == "*results.namedMem" }
