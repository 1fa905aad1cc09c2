// Package allkinds joins the two planes' registries into one with every
// built-in kind (tools.Kinds), for tests, benchmarks and single-process
// tools (emulators/resultsflow). The engine never uses it: the functions
// build shared/tools/controlkinds, the runner runner/kinds, so that
// neither links the other's kinds (the boundary test, shared/planes).
package allkinds

import (
	"github.com/noetl/gcpengine/runner/kinds"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
)

// Default returns a registry with every kind of tools.Kinds and a close
// function that releases their resources (call it once, after the last
// Run has returned): the control kinds built by controlkinds.Build with
// opts' HTTP options, credential store, results tier and egress policy,
// the runner kinds by kinds.Build with opts.
func Default(opts kinds.Options) (tools.Registry, func()) { return Build(opts, tools.Kinds) }

// Build is Default restricted to the given kinds (others are ignored).
func Build(opts kinds.Options, names []string) (tools.Registry, func()) {
	if opts.Egress != nil && opts.HTTP.Egress == nil {
		opts.HTTP.Egress = opts.Egress
	}
	reg, closeControl := controlkinds.Build(controlkinds.Options{HTTP: opts.HTTP, Credentials: opts.Credentials,
		Results: opts.Results, Egress: opts.Egress}, names)
	run, closeRunner := kinds.Build(opts, names)
	for k, t := range run {
		reg[k] = t
	}
	return reg, func() {
		closeRunner()
		closeControl()
	}
}
