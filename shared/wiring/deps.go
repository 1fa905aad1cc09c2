package wiring

import (
	"cloud.google.com/go/firestore"
	"context"
	"fmt"
	"github.com/noetl/gcpengine/shared/tools/secrets"
	"log/slog"
	"sync"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/bus/pubsubbus"
	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/credentials/credfirestore"
	"github.com/noetl/gcpengine/shared/credentials/credsecretmanager"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/tasks/cloudtasks"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
	"github.com/noetl/gcpengine/shared/worker"
)

// Needs is the set of dependencies a function declares (the Needs
// constant of each function package, passed to Get): Get builds those and
// what they are made of (Closure), nothing else. Every function has the
// base besides: the configuration, the logger, the signer, the store (DLQ
// entries of AckPermanent) and the bus with the operation-count flusher.
type Needs uint

// The dependencies a function can declare, by the Deps member each builds.
const (
	// NeedDispatcher is the Cloud Tasks dispatcher (Deps.Dispatcher), with
	// the results tier for the bodies of units over Cloud Tasks' 100 KB.
	NeedDispatcher Needs = 1 << iota
	// NeedResults is the results tier (Deps.Results: a GCS client).
	NeedResults
	// NeedCredentials is the credential store (Deps.Credentials: Firestore
	// metadata, and a Secret Manager client under
	// NOETL_CREDENTIAL_VALUES=secretmanager).
	NeedCredentials
	// NeedCatalog is the playbook catalog (Deps.Catalog).
	NeedCatalog
	// NeedControl is the api's control plane (Deps.Control).
	NeedControl
	// NeedRouter is route's router (Deps.Router).
	NeedRouter
	// NeedWorker is the worker without tools (Deps.Worker: the api's DLQ
	// replays of units).
	NeedWorker
	// NeedExecutor is the worker with its tool registry (Deps.Executor):
	// the control plane's kinds and the runner client of the runner kinds.
	NeedExecutor
)

// Closure returns n with what its dependencies are made of: the executor
// is the worker with tools; a control plane (Control, Router, Worker)
// creates tasks, reads and writes results and reads granted credentials;
// the worker resolves playbooks; the dispatcher keeps large bodies in the
// results tier.
func (n Needs) Closure() Needs {
	if n&NeedExecutor != 0 {
		n |= NeedWorker
	}
	if n&NeedWorker != 0 {
		n |= NeedCatalog
	}
	if n&(NeedControl|NeedRouter|NeedWorker) != 0 {
		n |= NeedDispatcher | NeedResults | NeedCredentials
	}
	if n&NeedDispatcher != 0 {
		n |= NeedResults
	}
	return n
}

// Builders construct the clients of Deps, one entry per client: Get uses
// DefaultBuilders; tests inject recording ones to see which ran for a
// function's Needs. Each is called at most once per Deps.
type Builders struct {
	// Logger returns the handler of the process's log records (and sets up
	// the process's telemetry).
	Logger func(cfg config.Config) slog.Handler
	// Store opens the Firestore store (every function: DLQ entries).
	Store func(ctx context.Context, cfg config.Config) (*firestorestore.Firestore, error)
	// Bus opens the Pub/Sub topics (every function: the flusher).
	Bus func(ctx context.Context, cfg config.Config, s *sign.Signer) (*pubsubbus.PubSub, error)
	// Flusher runs the operation-count flusher until ctx ends.
	Flusher func(ctx context.Context, b *pubsubbus.PubSub, log *slog.Logger)
	// Dispatcher opens the Cloud Tasks client (NeedDispatcher).
	Dispatcher func(ctx context.Context, cfg config.Config) (*cloudtasks.Dispatcher, error)
	// Results opens the results tier (NeedResults); the func closes it.
	Results func(ctx context.Context, cfg config.Config) (*results.Store, func(), error)
	// Credentials opens the credential store (NeedCredentials); the func
	// closes it (nil: nothing to close).
	Credentials func(ctx context.Context, cfg config.Config, st *firestorestore.Firestore, s *sign.Signer) (credentials.Store, func(), error)
	// Tools builds the control plane's tool kinds (NeedExecutor).
	Tools func(opts controlkinds.Options) (tools.Registry, func())
	// Runner builds the runner kinds' client (NeedExecutor).
	Runner func(cfg config.Config, creds credentials.Store, rs *results.Store, log *slog.Logger) tools.Registry
}

// DefaultBuilders are the builders of a deployed function: the Google
// Cloud clients of cfg.
func DefaultBuilders() Builders {
	return Builders{
		Logger: func(cfg config.Config) slog.Handler {
			// Every log record passes the redaction handler: secret-named
			// keys, URL query secrets and Basic/Bearer values, and the values
			// of the credentials of the context's redactor
			// (redact.WithRedactor), are masked (NoETL observability spec
			// §8.9).
			h := redact.NewHandler(telemetry.Setup("noetl-functions", cfg).Handler(), nil)
			slog.SetDefault(slog.New(h))
			return h
		},
		Store: func(ctx context.Context, cfg config.Config) (*firestorestore.Firestore, error) {
			return firestorestore.OpenFirestore(ctx, cfg.Project)
		},
		Bus: func(ctx context.Context, cfg config.Config, s *sign.Signer) (*pubsubbus.PubSub, error) {
			return pubsubbus.Open(ctx, cfg.Project, cfg.EventsTopic, cfg.CommandsTopic, s)
		},
		Flusher: func(ctx context.Context, b *pubsubbus.PubSub, log *slog.Logger) {
			go bus.RunFlusher(ctx, b, meter.Default, 500*time.Millisecond, time.Second, log)
		},
		Dispatcher: func(ctx context.Context, cfg config.Config) (*cloudtasks.Dispatcher, error) {
			return cloudtasks.Open(ctx, cfg.QueuePath(cfg.WorkQueue), cfg.QueuePath(cfg.TimersQueue), cfg.ExecuteURL)
		},
		Results: func(ctx context.Context, cfg config.Config) (*results.Store, func(), error) {
			gcs, err := storage.NewClient(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("runtime: storage client: %w", err)
			}
			st, err := ResultStore(cfg, func(bucket string) results.Backend { return gcsresults.NewGCS(gcs, bucket) })
			if err != nil {
				_ = gcs.Close()
				return nil, nil, err
			}
			return st, func() { _ = gcs.Close() }, nil
		},
		Credentials: openCredentials,
		Tools:       controlkinds.Control,
		Runner:      runnerTools,
	}
}

// Deps are the dependencies of a function instance: the base, built by
// NewDeps, and what the functions served declare (Ensure). A member a
// function did not declare is nil.
type Deps struct {
	// Control applies transitions on behalf of the api (cancellation,
	// DLQ discards) (NeedControl).
	Control *control.Control
	// Cfg is the configuration (base).
	Cfg config.Config
	// Log is the redacting logger (base).
	Log *slog.Logger
	// Store is the Firestore store (base: DLQ entries).
	Store *firestorestore.Firestore
	// Bus publishes on the events and commands topics (base: the flusher).
	Bus *pubsubbus.PubSub
	// Dispatcher creates Cloud Tasks (NeedDispatcher).
	Dispatcher *cloudtasks.Dispatcher
	// Router applies route's batches (NeedRouter).
	Router *router.Router
	// Worker runs units; its tools are built by NeedExecutor
	// (Deps.Executor) (NeedWorker).
	Worker *worker.Worker
	// Results is the results tier (NeedResults).
	Results *results.Store
	// Credentials is the credential store, unguarded: the api's
	// /credentials routes, launch (which checks grants itself) and
	// redaction. The tools, the worker and the control plane get
	// credentials.Guard of it (NeedCredentials).
	Credentials credentials.Store
	// Catalog resolves playbook paths (catalog first, then files)
	// (NeedCatalog).
	Catalog *catalog.Catalog
	// Signer signs what the functions publish and create, and verifies
	// what they receive (NOETL_SIGNING_KEY, shared/sign) (base).
	Signer *sign.Signer

	// build are the builders; mu guards built (the Needs built so far),
	// granted and closers.
	build Builders
	mu    sync.Mutex
	built Needs
	// granted is Credentials behind the grant guard (credentials.Guard):
	// what runs playbooks reads through it.
	granted credentials.Store
	// closers close the clients, in the order they were built.
	closers []func()
	// stopFlusher ends the operation-count flusher.
	stopFlusher context.CancelFunc
	// latent is the latency profile's decorators (latency.go; nil: off).
	latent *latent
}

// NewDeps builds the base of every function with b: the logger, the
// signer (NOETL_SIGNING_KEY: without it nothing could be verified, so no
// function starts), the store, the bus and the operation-count flusher.
func NewDeps(ctx context.Context, cfg config.Config, b Builders) (*Deps, error) {
	redact.SetExtraKeys(cfg.Logging.RedactKeys) // NOETL_LOGGING_REDACT_KEYS
	log := slog.New(b.Logger(cfg))
	// Only the engine drives the engine (README "Security").
	signer, err := sign.Parse(cfg.SigningKey)
	if err != nil {
		return nil, fmt.Errorf("runtime: NOETL_SIGNING_KEY: %w (every function needs the deployment's signing key: Secret Manager in GCP, .stack/env locally)", err)
	}
	st, err := b.Store(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st.DLQRetention = time.Duration(cfg.DLQ.RetentionDays) * 24 * time.Hour
	st.Retention = cfg.Retention()
	// Secret-named workload values are sealed in execution documents.
	st.Sealer = SignerSealer{Signer: signer}
	ps, err := b.Bus(ctx, cfg, signer)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	d := &Deps{Cfg: cfg, Log: log, Store: st, Bus: ps, Signer: signer, build: b,
		closers: []func(){func() { _ = st.Close() }, func() { _ = ps.Close() }}}
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	d.stopFlusher = stop
	b.Flusher(fctx, ps, log)
	return d, nil
}

// Ensure builds the members of needs (with their Closure) that are not
// built yet. A failed build is returned and tried again on the next call;
// what was built stays.
func (d *Deps) Ensure(ctx context.Context, needs Needs) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := needs.Closure() &^ d.built
	if want == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx) // the clients outlive the request
	if want&NeedResults != 0 {
		rs, closeRS, err := d.build.Results(ctx, d.Cfg)
		if err != nil {
			return err
		}
		d.Results = rs
		if closeRS != nil {
			d.closers = append(d.closers, closeRS)
		}
		d.built |= NeedResults
	}
	if want&NeedDispatcher != 0 {
		t, err := d.build.Dispatcher(ctx, d.Cfg)
		if err != nil {
			return err
		}
		t.Deadline = d.Cfg.DispatchDeadline
		t.Signer = d.Signer
		t.ServiceAccount, t.Audience = d.Cfg.TasksServiceAccount, d.Cfg.ExecuteAudience
		t.Bodies = d.Results
		d.Dispatcher = t
		d.closers = append(d.closers, func() { _ = t.Close() })
		d.built |= NeedDispatcher
	}
	if want&NeedCredentials != 0 {
		creds, closeCreds, err := d.build.Credentials(ctx, d.Cfg, d.Store, d.Signer)
		if err != nil {
			return err
		}
		// What runs playbooks reads only the credentials granted to the
		// execution at hand (README "Security"): a name a template computes
		// at run time is checked where the value is read.
		d.Credentials, d.granted = creds, credentials.Guard(creds)
		if closeCreds != nil {
			d.closers = append(d.closers, closeCreds)
		}
		d.built |= NeedCredentials
	}
	if want&NeedCatalog != 0 {
		d.Catalog = &catalog.Catalog{Store: d.Store, Root: d.Cfg.RepoRoot}
		d.built |= NeedCatalog
	}
	if want&NeedControl != 0 {
		d.Control = d.control("api")
		d.built |= NeedControl
	}
	if want&NeedRouter != 0 {
		d.Router = &router.Router{Control: d.control("route"), Log: d.Log}
		d.built |= NeedRouter
	}
	if want&NeedWorker != 0 {
		cfg := d.Cfg
		d.Worker = &worker.Worker{Control: d.control("execute"), Store: d.Store, Bus: d.Bus, Results: d.Results, Catalog: d.Catalog, Credentials: d.granted, Log: d.Log,
			LeaseTTL: cfg.LeaseTTL, HeartbeatInterval: cfg.HeartbeatInterval, HandOffAfter: cfg.DispatchDeadline * 4 / 5, ToolTimeout: cfg.Timeouts.ToolDefault, LoopItemTimeout: cfg.Timeouts.LoopItem,
			SinkTimeout: cfg.Timeouts.SinkDefault, FileTaskFailures: cfg.DLQ.Enabled, HoldTaskFailures: cfg.DLQ.Hold, PGDSN: cfg.PGDSN,
			BarrierKey: d.Signer.BarrierKey, ErrorMax: cfg.TaskErrorMaxBytes, ContinueUnits: cfg.ContinueUnits, ContinueBudget: cfg.ContinueBudget, ContinueDefer: cfg.ContinueDefer}
		d.built |= NeedWorker
	}
	if want&NeedExecutor != 0 {
		// The control plane's http kind passes the same egress policy as
		// the runner's kinds (NOETL_EGRESS_*; validated at start).
		policy, err := egress.New(d.Cfg.Egress.Profile, d.Cfg.Egress.Allow, d.Cfg.Egress.Deny)
		if err != nil {
			d.Log.Error("egress policy", "error", err.Error())
			policy, _ = egress.New("cloud", nil, nil)
		}
		reg, closeTools := d.build.Tools(controlkinds.Options{Credentials: d.granted, Results: d.Results, Egress: policy,
			HTTP: httptool.Options{AllowLinkLocal: d.Cfg.HTTPAllowLinkLocal}, Secrets: secrets.Options{EnvAllow: envAllow(d.Cfg)}})
		for k, t := range d.build.Runner(d.Cfg, d.granted, d.Results, d.Log) {
			reg[k] = t
		}
		d.Worker.Tools = reg
		if closeTools != nil {
			d.closers = append(d.closers, closeTools)
		}
		d.built |= NeedExecutor
	}
	d.applyLatency(d.built) // NOETL_LATENCY_PROFILE
	return nil
}

// control returns a control plane whose transitions are attributed to
// source (the function applying them).
func (d *Deps) control(source string) *control.Control {
	return &control.Control{Store: d.Store, Bus: d.Bus, Tasks: d.Dispatcher, Results: d.Results, Credentials: d.granted,
		Opts: EngineOptions(d.Cfg), Log: d.Log, Source: source}
}

// EngineOptions maps the configuration to the pure engine's typed options
// (the engine reads no environment): the execution policies of NoETL
// observability spec §8.8 (on_step_fail, on_when_error, on_sink_fail),
// the retry budgets of tasks without a policy (§8.4), the `when` budget
// and the execution and loop deadlines (§8.5, §8.12).
func EngineOptions(cfg config.Config) engine.Options {
	budget := func(b config.Backoff) engine.Budget {
		return engine.Budget{MaxAttempts: b.MaxAttempts, Base: b.Base, Max: b.Max}
	}
	return engine.Options{
		DefaultMaxInFlight: cfg.DefaultMaxInFlight,
		OnStepFail:         cfg.Policies.OnStepFail,
		OnWhenError:        cfg.Policies.OnWhenError,
		OnSinkFail:         cfg.Policies.OnSinkFail,
		ExecutionDeadline:  cfg.ExecutionDeadline,
		LoopTotal:          cfg.Timeouts.LoopTotal,
		WhenTimeout:        cfg.Orchestrator.EvaluateWhenTimeout,
		TaskRetry:          budget(cfg.Retries.Plugin),
		SinkRetry:          budget(cfg.Retries.Sink),
	}
}

// Built returns the Needs built so far (with their closures).
func (d *Deps) Built() Needs {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.built
}

// Executor returns execute's worker with its tool registry (NeedExecutor,
// which execute declares): the control plane's own kinds
// (tools.ControlKinds) and, for the runner kinds, the runner client
// (runnerTools). Functions that run no tasks never build it.
func (d *Deps) Executor() *worker.Worker {
	if err := d.Ensure(context.Background(), NeedExecutor); err != nil {
		d.Log.Error("runtime: building the executor", "error", err.Error())
	}
	return d.Worker
}

var (
	mu   sync.Mutex
	proc *Deps
)

// Get returns the instance's dependencies with needs built (the calling
// function's Needs): the base on first use, then what needs adds (the
// local stack serves every function from one process: it builds the union
// of what the functions called so far declare). A failed creation (a bad
// configuration, a backend not reachable yet) is returned to this request
// and tried again on the next one, so a cold start that failed does not
// poison the instance.
func Get(ctx context.Context, needs Needs) (*Deps, error) {
	mu.Lock()
	d := proc
	if d == nil {
		cfg, err := config.LoadE()
		if err != nil {
			mu.Unlock()
			return nil, fmt.Errorf("runtime: configuration: %w", err)
		}
		d, err = NewDeps(context.Background(), cfg, DefaultBuilders())
		if err != nil {
			mu.Unlock()
			return nil, err
		}
		proc = d
	}
	mu.Unlock()
	if err := d.Ensure(ctx, needs); err != nil {
		return nil, err
	}
	return d, nil
}

// openCredentials opens the credential store of cfg: metadata in
// Firestore, values in Secret Manager (NOETL_CREDENTIAL_VALUES=
// secretmanager, the cloud profile's default) or sealed in Firestore
// under the signing key (firestore, the local stack's). The returned
// function closes the Secret Manager client (nil when there is none).
func openCredentials(ctx context.Context, cfg config.Config, st *firestorestore.Firestore, signer *sign.Signer) (credentials.Store, func(), error) {
	v, closeValues, err := credentialValues(ctx, cfg, st.Client(), signer, func(ctx context.Context) (*secretmanager.Client, error) {
		return secretmanager.NewClient(ctx)
	})
	if err != nil {
		return nil, nil, err
	}
	return credfirestore.NewFirestore(st.Client(), v), closeValues, nil
}

// credentialValues is where credential values live under
// NOETL_CREDENTIAL_VALUES: one Secret Manager secret each of the client
// openSM opens (secretmanager; the returned function closes it), or
// sealed under signer in Firestore fs (firestore; nil function). Errors:
// the Secret Manager client's.
func credentialValues(ctx context.Context, cfg config.Config, fs *firestore.Client, signer *sign.Signer, openSM func(context.Context) (*secretmanager.Client, error)) (credentials.Values, func(), error) {
	if cfg.CredentialValues == "secretmanager" {
		c, err := openSM(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime: Secret Manager client: %w", err)
		}
		return credsecretmanager.NewSecretManager(c, cfg.Project), func() { _ = c.Close() }, nil
	}
	return credfirestore.NewFirestoreValues(fs, credfirestore.SealWith(signer)), nil, nil
}

// Close stops the flusher (flushing pending operation counts) and closes
// the clients built, the last built first.
func (d *Deps) Close() {
	if d.stopFlusher != nil {
		d.stopFlusher()
	}
	time.Sleep(100 * time.Millisecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// ResultStore builds the results tier a configuration describes, with
// open giving the object store of a bucket: the results bucket as the
// home backend; tenant, project and env of URIs and keys
// (NOETL_TENANT, NOETL_TENANT_PROJECT, NOETL_RESULT_ENV); the cell map
// (NOETL_RESULT_CELLS_FILE, each cell's bucket as its backend); the
// instance's cache (NOETL_RESULT_CACHE_MB), the whole-read bound
// (NOETL_RESULT_MATERIALIZE_MAX_MB) and the digest reads check
// (NOETL_RESULT_READ_CHECK). Errors: a cell map that does not load or
// validate; an unknown read check.
func ResultStore(cfg config.Config, open func(bucket string) results.Backend) (*results.Store, error) {
	st := &results.Store{
		Backend:        open(cfg.ResultsBucket),
		Locator:        results.Locator{Env: cfg.ResultEnv, Tenant: cfg.Tenant, Project: cfg.TenantProject},
		InlineMax:      cfg.ResultInlineMax,
		MaterializeMax: int64(cfg.ResultMaterializeMaxMB) << 20,
	}
	check, err := results.ParseReadCheck(cfg.ResultReadCheck)
	if err != nil {
		return nil, fmt.Errorf("runtime: NOETL_RESULT_READ_CHECK: %w", err)
	}
	st.ReadCheck = check
	if cfg.ResultCacheMB > 0 {
		st.Cache = results.NewCache(int64(cfg.ResultCacheMB) << 20)
	}
	if cfg.ResultCellsFile != "" {
		m, err := results.LoadCellMap(cfg.ResultCellsFile, st.ShardCount)
		if err != nil {
			return nil, fmt.Errorf("runtime: NOETL_RESULT_CELLS_FILE: %w", err)
		}
		st.Cells = m
		st.CellBackends = make(map[string]results.Backend, len(m.Cells))
		for _, c := range m.Cells {
			if c.Bucket == cfg.ResultsBucket {
				st.CellBackends[c.Name] = st.Backend
			} else {
				st.CellBackends[c.Name] = open(c.Bucket)
			}
		}
	}
	return st, nil
}

// envAllow is the secrets kind's env allow-list of cfg
// (NOETL_SECRETS_ENV_ALLOW); nil when the setting is empty, which gives
// the kind its default (secrets.DefaultEnvAllow).
func envAllow(cfg config.Config) []string {
	if len(cfg.SecretsEnvAllow) == 0 {
		return nil
	}
	return cfg.SecretsEnvAllow
}
