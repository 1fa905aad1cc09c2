// Package kinds builds the runner's registry of tool kinds (Runner:
// tools.RunnerKinds, the kinds that run author code or reach
// author-chosen endpoints). Each plane builds its own: the functions build
// theirs with shared/tools/controlkinds and so link no author-code kind,
// and this package imports no control kind, so the runner links none (the
// boundary test, shared/planes). shared/tools/allkinds joins the two for
// tests and single-process tools.
package kinds

import (
	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/gcs"
	"github.com/noetl/gcpengine/runner/kinds/gcsconn"
	"github.com/noetl/gcpengine/runner/kinds/nats"
	"github.com/noetl/gcpengine/runner/kinds/postgres"
	"github.com/noetl/gcpengine/runner/kinds/python"
	"github.com/noetl/gcpengine/runner/kinds/s3"
	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/runner/kinds/shell"
	"github.com/noetl/gcpengine/runner/kinds/subscription"
	"github.com/noetl/gcpengine/runner/kinds/transfer"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
)

// Options configures the runner kinds; the zero value gives every kind
// its package defaults (no credential store, no results store).
type Options struct {
	// PythonBin is the python interpreter (a name on PATH or a path), e.g.
	// the NOETL_PYTHON setting; it overrides Python.Interpreter when set.
	// When both are empty the interpreter is python.PreferredInterpreter()
	// (/usr/bin/python3 when it exists, which sees Debian's
	// python3-psycopg2 and python3-psycopg; else python3 on PATH).
	PythonBin string
	// HTTP configures the transfer kind's http source (client, body limit,
	// default timeout; allkinds passes it to the http kind too).
	HTTP httptool.Options
	// Python configures the python kind (interpreter, timeout, log cap).
	Python python.Options
	// Postgres configures the postgres kind (pool cache bounds, timeout).
	Postgres postgres.Options
	// DuckDB configures the duckdb kind (base directory, memory limit).
	DuckDB duckdb.Options
	// Shell configures the shell kind (PATH, timeout, output cap).
	Shell shell.Options
	// GCS configures the gcs kind (local directories, timeout).
	GCS gcs.Options
	// S3 configures the s3 kind (local directories, timeout); its
	// credentials, egress, data roots and reserved buckets are filled from
	// the fields below and the gcs kind's.
	S3 s3.Options
	// NATS configures the nats kind (default server).
	NATS nats.Options
	// Credentials is the credential store (shared/credentials) of
	// `auth: <credential name>` of the postgres, nats, subscription, gcs,
	// s3 and transfer kinds and of gcs/http `script:` sources (the runner:
	// the credentials granted to the request). Nil: those fail with a
	// config error.
	Credentials credentials.Store
	// Results is the results tier the transfer kind's source type result
	// reads stored tables from. Nil: it fails with a config error. The
	// runner is built without it (Runner: it holds no right
	// to the tier): there transfer reads the request's tier instead
	// (results.StoreFrom, a Store over the signed URLs execute granted the
	// attempt, runner/server grants.go) and the duckdb kind streams into
	// the sink of the one object it was granted (results.SinkFrom).
	Results *results.Store
	// Project completes short Pub/Sub subscription names (the
	// GOOGLE_CLOUD_PROJECT setting).
	Project string
	// ScriptDir resolves relative `script:` file paths of python and
	// postgres tasks (e.g. the NOETL_REPO_ROOT setting; default the
	// working directory).
	ScriptDir string
	// Egress is the network policy of every kind's connections (http,
	// postgres, nats, gcs, subscription, transfer, script sources;
	// shared/egress). Nil: the http kind refuses link-local and metadata
	// addresses only, the others check nothing (tests).
	Egress *egress.Policy
	// DataRoots are the operator's data directories (gcs local files of a
	// task with a workspace; NOETL_RUNNER_DATA_ROOTS).
	DataRoots []string
}

// Runner is Build of tools.RunnerKinds: the runner's kinds.
func Runner(opts Options) (tools.Registry, func()) { return Build(opts, tools.RunnerKinds) }

// Build returns a registry of the given kinds that are runner kinds
// (names of tools.RunnerKinds; others, the control kinds included, are
// ignored), constructing only what they need, and the function that
// releases their resources (postgres pools, DuckDB files, NATS
// connections, Pub/Sub and GCS clients). Call it once, after the last Run
// has returned.
func Build(opts Options, kinds []string) (tools.Registry, func()) {
	if opts.PythonBin != "" {
		opts.Python.Interpreter = opts.PythonBin
	}
	if opts.Python.Interpreter == "" {
		opts.Python.Interpreter = python.PreferredInterpreter()
	}
	clients := &gcsconn.Clients{Egress: opts.Egress}
	if opts.Egress != nil {
		if opts.HTTP.Egress == nil {
			opts.HTTP.Egress = opts.Egress
		}
		if opts.Postgres.Egress == nil {
			opts.Postgres.Egress = opts.Egress
		}
		if opts.NATS.Egress == nil {
			opts.NATS.Egress = opts.Egress
		}
	}
	if opts.GCS.DataRoots == nil {
		opts.GCS.DataRoots = opts.DataRoots
	}
	fillScripts := func(o *script.Options) {
		if o.HTTP == nil {
			o.HTTP = httptool.SharedClient()
			if opts.Egress != nil {
				o.HTTP = opts.Egress.Client()
			}
		}
		if o.GCS == nil {
			o.GCS = clients
		}
		if o.Credentials == nil {
			o.Credentials = opts.Credentials
		}
		if o.Egress == nil {
			o.Egress = opts.Egress
		}
		if o.BaseDir == "" {
			o.BaseDir = opts.ScriptDir
		}
	}
	fillScripts(&opts.Python.Scripts)
	fillScripts(&opts.Postgres.Scripts)
	if opts.Postgres.Credentials == nil {
		opts.Postgres.Credentials = opts.Credentials
	}
	if opts.GCS.Credentials == nil {
		opts.GCS.Credentials = opts.Credentials
	}
	if opts.GCS.Clients == nil {
		opts.GCS.Clients = clients
	}
	if opts.GCS.ReservedBuckets == nil && opts.Results != nil {
		if bn, ok := opts.Results.Backend.(results.BucketNamer); ok {
			opts.GCS.ReservedBuckets = []string{bn.Bucket()}
		}
	}
	if opts.S3.Credentials == nil {
		opts.S3.Credentials = opts.Credentials
	}
	if opts.S3.Egress == nil {
		opts.S3.Egress = opts.Egress
	}
	if opts.S3.DataRoots == nil {
		opts.S3.DataRoots = opts.GCS.DataRoots
	}
	if opts.S3.LocalDirs == nil {
		opts.S3.LocalDirs = opts.GCS.LocalDirs
	}
	if opts.S3.ReservedBuckets == nil {
		opts.S3.ReservedBuckets = opts.GCS.ReservedBuckets
	}
	if opts.HTTP.Credentials == nil {
		opts.HTTP.Credentials = opts.Credentials
	}
	if opts.NATS.Credentials == nil {
		opts.NATS.Credentials = opts.Credentials
	}
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var closers []func()
	reg := tools.Registry{}
	var pg *postgres.Tool
	var dk *duckdb.Tool
	var ht *httptool.Tool
	if want[tools.KindPostgres] || want[tools.KindTransfer] {
		pg = postgres.New(opts.Postgres)
		closers = append(closers, pg.Close)
	}
	if want[tools.KindDuckDB] || want[tools.KindTransfer] {
		dk = duckdb.New(opts.DuckDB)
		closers = append(closers, dk.Close)
	}
	if want[tools.KindTransfer] {
		ht = httptool.New(opts.HTTP)
	}
	for _, k := range kinds {
		switch k {
		case tools.KindPython:
			py := python.New(opts.Python)
			closers = append(closers, py.Close) // its warm interpreters
			reg[k] = tools.Adapt(py)
		case tools.KindPostgres:
			reg[k] = tools.Adapt(pg)
		case tools.KindDuckDB:
			reg[k] = tools.Adapt(dk)
		case tools.KindTransfer:
			reg[k] = tools.Adapt(transfer.New(transfer.Options{Postgres: pg, DuckDB: dk, HTTP: ht, Credentials: opts.Credentials, Results: opts.Results, S3: s3.New(opts.S3)}))
		case tools.KindGCS:
			reg[k] = tools.Adapt(gcs.New(opts.GCS))
		case tools.KindS3:
			reg[k] = tools.Adapt(s3.New(opts.S3))
		case tools.KindNATS:
			nt := nats.New(opts.NATS)
			closers = append(closers, nt.Close)
			reg[k] = tools.Adapt(nt)
		case tools.KindSubscription:
			sub := subscription.New(subscription.Options{Credentials: opts.Credentials, Project: opts.Project, Egress: opts.Egress})
			closers = append(closers, sub.Close)
			reg[k] = tools.Adapt(sub)
		case tools.KindShell:
			reg[k] = tools.Adapt(shell.New(opts.Shell))
		}
	}
	closers = append(closers, clients.Close)
	return reg, func() {
		for _, c := range closers {
			c()
		}
	}
}

// The postgres kind honours the barrier (a signature drift would silently
// turn it into a plain Executor).
var _ tools.BarrierExecutor = (*postgres.Tool)(nil)
