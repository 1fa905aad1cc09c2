// Package controlkinds builds the control plane's registry of tool kinds
// (tools.ControlKinds: noop, http, secrets, artifact, result_fetch): the
// kinds that run no author code and reach no endpoint but through the
// egress policy or the engine's own stores. It imports those kinds only,
// so that the functions' build, which wires this registry
// (shared/wiring), links no author-code kind, sandbox or DuckDB (the
// boundary test, shared/planes). The runner's registry is
// runner/kinds.
package controlkinds

import (
	"os"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/artifact"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/tools/secrets"
)

// Options configures the control plane's kinds; the zero value gives every
// kind its package defaults (no credential store, no results store).
type Options struct {
	// HTTP configures the http kind (client, body limit, default timeout).
	HTTP httptool.Options
	// Secrets configures the secrets kind. A nil Secrets.EnvAllow is read
	// from NOETL_SECRETS_ENV_ALLOW (comma-separated names or prefixes
	// ending in '*'; unset: secrets.DefaultEnvAllow, NOETL_SECRET_*).
	Secrets secrets.Options
	// Credentials is the credential store (shared/credentials): the
	// secrets kind's credential provider and `auth: <credential name>` of
	// the http kind. Nil: those fail with a config error.
	Credentials credentials.Store
	// Results is the results tier the artifact and result_fetch kinds
	// read references from. Nil: they fail with a config error.
	Results *results.Store
	// Egress is the network policy of the http kind's connections
	// (shared/egress). Nil: the http kind refuses link-local and metadata
	// addresses only.
	Egress *egress.Policy
}

// Fill completes opts the way Build does (the environment's secrets allow
// list, the egress policy and credential store of the kinds that take
// them); runner/kinds fills its control kinds' options with it.
func Fill(opts *Options) {
	if opts.Secrets.EnvAllow == nil {
		if v := strings.TrimSpace(os.Getenv("NOETL_SECRETS_ENV_ALLOW")); v != "" {
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n != "" {
					opts.Secrets.EnvAllow = append(opts.Secrets.EnvAllow, n)
				}
			}
		}
	}
	if opts.Egress != nil && opts.HTTP.Egress == nil {
		opts.HTTP.Egress = opts.Egress
	}
	if opts.Secrets.Credentials == nil {
		opts.Secrets.Credentials = opts.Credentials
	}
	if opts.HTTP.Credentials == nil {
		opts.HTTP.Credentials = opts.Credentials
	}
}

// Control is Build of tools.ControlKinds: the control plane's registry.
func Control(opts Options) (tools.Registry, func()) { return Build(opts, tools.ControlKinds) }

// Build returns a registry of the given kinds that are control kinds
// (others are ignored) and the function that releases their resources
// (none today; call it once, after the last Run has returned).
func Build(opts Options, kinds []string) (tools.Registry, func()) {
	Fill(&opts)
	reg := tools.Registry{}
	for _, k := range kinds {
		switch k {
		case tools.KindNoop:
			reg[k] = tools.Adapt(noop.New())
		case tools.KindHTTP:
			reg[k] = tools.Adapt(httptool.New(opts.HTTP))
		case tools.KindSecrets:
			reg[k] = tools.Adapt(secrets.New(opts.Secrets))
		case tools.KindArtifact:
			reg[k] = tools.Adapt(artifact.New(opts.Results))
		case tools.KindResultFetch:
			reg[k] = tools.Adapt(artifact.Fetch{Tool: artifact.New(opts.Results)})
		}
	}
	return reg, func() {}
}
