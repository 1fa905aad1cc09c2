package wiring

import (
	"slices"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/latency"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/tools"
)

// latent holds the latency profile's decorators of a Deps
// (NOETL_LATENCY_PROFILE): one injector and one decorated store, bus and
// task creator shared by every control plane and the worker.
type latent struct {
	in    *latency.Injector
	store store.Store
	bus   bus.Publisher
	tasks tasks.Creator
	// wrapped are the Needs whose members are wrapped already.
	wrapped Needs
}

// applyLatency puts what Ensure has built (built; each member once)
// behind the latency
// profile NOETL_LATENCY_PROFILE names (shared/latency), the one place the
// profile is hooked in: the results tier's backends (GCS reads and
// writes, the dispatcher's offloaded bodies too), the store, bus and
// task creator of the control planes (api, route, execute) and of the
// worker, and the runner kinds' tools (the Cloud Run request). The
// profile off (the default), nothing is wrapped. The functions' own
// handlers' calls on Deps.Store and Deps.Bus (materialize's projection,
// the api's reads) are not delayed.
func (d *Deps) applyLatency(built Needs) {
	if d.latent == nil {
		p, ok, err := latency.Lookup(d.Cfg.LatencyProfile)
		if err != nil {
			d.Log.Error("latency profile", "error", err.Error())
		}
		if !ok {
			return
		}
		d.latent = &latent{in: latency.New(p, uint64(time.Now().UnixNano()))}
		d.latent.store = latency.Store(d.Store, d.latent.in)
		d.latent.bus = latency.Publisher(d.Bus, d.latent.in)
		d.Log.Info("latency profile: the functions' cloud calls wait the profile's latencies", "profile", p.Name)
	}
	l := d.latent
	built &^= l.wrapped
	l.wrapped |= built
	if built&NeedResults != 0 && d.Results != nil {
		home := d.Results.Backend
		d.Results.Backend = latency.Backend(home, l.in)
		for name, b := range d.Results.CellBackends {
			if b == home {
				d.Results.CellBackends[name] = d.Results.Backend
			} else {
				d.Results.CellBackends[name] = latency.Backend(b, l.in)
			}
		}
	}
	if l.tasks == nil && d.Dispatcher != nil {
		l.tasks = latency.Tasks(d.Dispatcher, l.in)
	}
	for _, c := range []struct {
		need Needs
		ok   bool
	}{{NeedControl, d.Control != nil}, {NeedRouter, d.Router != nil}, {NeedWorker, d.Worker != nil}} {
		if built&c.need == 0 || !c.ok {
			continue
		}
		cp := d.Control
		switch c.need {
		case NeedRouter:
			cp = d.Router.Control
		case NeedWorker:
			cp = d.Worker.Control
			d.Worker.Store, d.Worker.Bus = l.store, l.bus
		}
		cp.Store, cp.Bus = l.store, l.bus
		if l.tasks != nil {
			cp.Tasks = l.tasks
		}
	}
	if built&NeedExecutor != 0 && d.Worker != nil {
		runner := tools.Registry{}
		for k, t := range d.Worker.Tools {
			if slices.Contains(tools.RunnerKinds, k) {
				runner[k] = t
			}
		}
		for k, t := range latency.Tools(runner, l.in) {
			d.Worker.Tools[k] = t
		}
	}
}

// Tasks is the task creator a function's handler calls (dispatch's
// bulk fan-out): the Cloud Tasks dispatcher, behind the latency profile's
// decorator when NOETL_LATENCY_PROFILE names one (NeedDispatcher must be
// built).
func (d *Deps) Tasks() tasks.Creator {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.latent != nil && d.latent.tasks != nil {
		return d.latent.tasks
	}
	return d.Dispatcher
}
