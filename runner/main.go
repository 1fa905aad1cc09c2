// Command runner is the engine's data plane (README "Architecture"): the
// process that runs the task kinds whose configuration is author code or
// an author-chosen endpoint (tools.RunnerKinds: python, shell, duckdb,
// postgres, transfer, gcs, nats, subscription, and their `script:`
// sources), one HTTP request per task attempt from execute
// (shared/runnerclient). It holds no engine secret and no control-plane right:
//
//   - it refuses to start with an engine secret or a cloud identity in its
//     environment (the signing key, the api token, credentials files,
//     emulator hosts);
//   - it runs as root of a user namespace whose uids map to an
//     unprivileged host range (the local stack's supervisor starts it so;
//     started as real root — its container — it confines itself the same
//     way first), so it cannot read the host's keys, and gives each
//     task a uid of that range;
//   - it admits only callers with an ID token of execute's service
//     account for its own URL (shared/oidc; in GCP Cloud Run's IAM admits
//     only that account too);
//   - every task gets a private workspace (a tmpfs of NOETL_SANDBOX_DISK_MB),
//     python, shell and duckdb tasks a room of their own: their own uid,
//     mount, PID, network, IPC and UTS namespaces, a root with nothing of
//     the host but the system, a control group with the NOETL_SANDBOX_*
//     limits and a seccomp filter (DuckDB runs in a worker process: no
//     author SQL runs in the runner's process); every connection of every
//     kind passes the egress policy (NOETL_EGRESS_*).
//
// Usage: runner [--listen ADDR] [--confine-uid BASE]
//
// It listens on ADDR (default :$PORT, PORT default 8080) and answers GET
// /healthz and POST /v1/run. Configuration: README "Configuration"
// (NOETL_RUNNER_*, NOETL_EGRESS_*, NOETL_SANDBOX_*, NOETL_DUCKDB_*).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	enforce "github.com/noetl/gcpengine/runner/egress"
	"github.com/noetl/gcpengine/runner/kinds"
	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/gcs"
	"github.com/noetl/gcpengine/runner/kinds/python"
	"github.com/noetl/gcpengine/runner/kinds/shell"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/runner/server"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"github.com/noetl/gcpengine/shared/tools"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
)

// DefaultConfineUID is the first host uid of the range a runner started as
// real root maps its user namespace onto (65536 uids).
const DefaultConfineUID = 0x60000000

// TaskUIDBase is the first uid (of the runner's user namespace) of the
// tasks' dedicated uids.
const TaskUIDBase = 1000

// forbiddenEnv are variables that would give user code an engine secret or
// a cloud identity: the runner refuses to start with any of them set.
var forbiddenEnv = []string{"NOETL_SIGNING_KEY", "NOETL_API_TOKEN", "NOETL_RUNNER_TOKEN_KEY_FILE", "NOETL_OIDC_KEY_FILE",
	"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST",
	"STORAGE_EMULATOR_HOST", "CLOUDTASKS_EMULATOR_HOST", "NOETL_PG_DSN"}

func main() {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: runner [--listen ADDR] [--confine-uid BASE]

The engine's data plane: runs python, shell, duckdb, postgres, transfer,
gcs, nats and subscription tasks for execute (POST /v1/run), each in its
own sandbox, behind the egress policy. README "Architecture" and
"Security"; configuration in README "Configuration".

`)
		fs.PrintDefaults()
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	listen := fs.String("listen", ":"+port, "address to listen on")
	confineUID := fs.Int("confine-uid", DefaultConfineUID, "first host uid of the 65536 uids a runner started as real root maps its user namespace onto")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	log := slog.New(redact.NewHandler(slog.NewJSONHandler(os.Stderr, nil), nil)).With("component", "runner")
	slog.SetDefault(log)
	if err := run(*listen, *confineUID, log); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		log.Error("runner: " + err.Error())
		os.Exit(1)
	}
}

func run(listen string, confineUID int, log *slog.Logger) error {
	// Descriptors inherited from whoever started the runner stay out of
	// everything it starts.
	if err := sandbox.InheritNothing(); err != nil {
		return err
	}
	for _, k := range forbiddenEnv {
		if _, set := os.LookupEnv(k); set {
			return fmt.Errorf("%s is set: the runner holds no engine secret and no cloud identity (start it with an environment of its own)", k)
		}
	}
	c, err := sandbox.Confined()
	if err != nil {
		return err
	}
	if c.Initial && c.Root {
		return confineSelf(confineUID, log)
	}
	if !c.Root || c.Initial || c.UIDs < TaskUIDBase+16 {
		return fmt.Errorf("the runner must run as root of a user namespace that maps at least %d uids (started as real root it confines itself; the local stack starts it confined): %+v", TaskUIDBase+16, c)
	}
	cfg, err := config.LoadE()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	redact.SetExtraKeys(cfg.Logging.RedactKeys) // NOETL_LOGGING_REDACT_KEYS
	if cfg.Logging.Level == "debug" {
		log = slog.New(redact.NewHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), nil)).With("component", "runner")
		slog.SetDefault(log)
	}
	if cfg.Runner.Audience == "" {
		return errors.New("NOETL_RUNNER_AUDIENCE (or NOETL_RUNNER_URL) is not set: the runner must know its own URL to verify its callers' tokens")
	}
	// Mounts made for tasks stay in the runner's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	policy, err := egress.New(cfg.Egress.Profile, cfg.Egress.Allow, cfg.Egress.Deny)
	if err != nil {
		return err
	}
	// Whatever a library dials over HTTP in this process (a storage
	// client's token exchange, a script source) passes the policy too.
	http.DefaultTransport = policy.Transport()
	work := cfg.Runner.WorkDir
	if err := os.MkdirAll(work, 0o711); err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	reserved, err := reservedBuckets(cfg)
	if err != nil {
		return err
	}
	so := sandbox.FromConfig(cfg.Sandbox)
	so.Isolate, so.Network, so.DataRoots, so.Logger = true, policy, cfg.Sandbox.DataRoots, log
	so.ControlDir, so.LockDir = filepath.Join(work, ".sandbox"), filepath.Join(work, ".uids")
	if so.BaseUID+so.PoolSize > c.UIDs {
		so.BaseUID, so.PoolSize = TaskUIDBase, min(so.PoolSize, c.UIDs-TaskUIDBase)
	}
	sb, err := sandbox.New(so)
	if err != nil {
		return err
	}
	if err := requireRooms(sb.Mode()); err != nil {
		return err
	}
	diskBytes := int64(cfg.Sandbox.DiskMB) << 20
	wsRoot := filepath.Join(work, "tasks")
	newWorkspace := func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(wsRoot, diskBytes, true) }
	reg, closeTools := kinds.Runner(toolOptions(cfg, sb, policy, reserved, newWorkspace))
	defer closeTools()
	v, err := tokenVerifier(context.Background(), cfg)
	if err != nil {
		return err
	}
	// Result grants (signed URLs of the objects a task may read and
	// write) are used through the egress policy: the object store's host
	// must be allowed (GCP: storage.googleapis.com; the stack: its
	// signed-URL gateway).
	// Connection quotas (docs "Security"): what one task, and all tasks
	// of one execution, hold open at once through the forwarders and
	// proxies of their network namespaces on this runner.
	conns := &enforce.Conns{ExecutionMax: cfg.Runner.ExecutionConnections}
	h := &server.Handler{Tools: reg, Auth: v, Log: log, ResultsHTTP: policy.Client(),
		Setup: func(ctx context.Context, req runnerproto.Request) (context.Context, func(), error) {
			ws, err := newWorkspace()
			if err != nil {
				return ctx, nil, err
			}
			ctx = enforce.WithConns(ctx, conns.Task(req.ExecutionID, cfg.Runner.TaskConnections))
			return sandbox.WithWorkspace(ctx, ws), func() { _ = ws.Close() }, nil
		}}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	log.Info("runner ready", "listen", l.Addr().String(), "audience", cfg.Runner.Audience, "invoker", cfg.Runner.Invoker,
		"egress_profile", policy.Profile, "egress_allow", strings.Join(cfg.Egress.Allow, ","), "sandbox", fmt.Sprintf("%+v", sb.Mode()),
		"cgroups", int(sb.Cgroups()), "host_uid", c.HostUID, "kinds", strings.Join(tools.RunnerKinds, ","))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	h.Wait() // the attempts' workspaces, released after their answers
	return err
}

// requireRooms refuses a sandbox whose commands would run without the
// seccomp filter (a kernel that refuses it): the runner does not run
// authors' code without it (docs/security.md, "Rooms").
func requireRooms(m sandbox.Mode) error {
	if !m.Seccomp {
		return errors.New("the kernel refuses the sandbox's seccomp filter: the runner does not run authors' code without it (docs/security.md, \"Rooms\")")
	}
	return nil
}

// duckDBMemoryMB is DuckDB's memory_limit in a worker: NOETL_DUCKDB_MEMORY_MB,
// at most three quarters of the task's memory (NOETL_SANDBOX_MEMORY_MB),
// so that DuckDB spills before its control group kills it (what DuckDB
// does not count, such as the strings repeat() builds, is held by the
// group alone).
func duckDBMemoryMB(cfg config.Config) int {
	mb := cfg.DuckDB.MemoryMB
	if room := cfg.Sandbox.MemoryMB * 3 / 4; cfg.Sandbox.MemoryMB > 0 && (mb <= 0 || mb > room) {
		mb = room
	}
	return mb
}

// reservedBuckets are the engine's buckets the runner's gcs kind refuses
// by name: the results bucket and, with a cell map
// (NOETL_RESULT_CELLS_FILE), every cell's bucket. Errors: the cell map's.
func reservedBuckets(cfg config.Config) ([]string, error) {
	out := []string{cfg.ResultsBucket}
	if cfg.ResultCellsFile == "" {
		return out, nil
	}
	m, err := results.LoadCellMap(cfg.ResultCellsFile, results.DefaultShardCount)
	if err != nil {
		return nil, fmt.Errorf("NOETL_RESULT_CELLS_FILE: %w", err)
	}
	for _, c := range m.Cells {
		if !slices.Contains(out, c.Bucket) {
			out = append(out, c.Bucket)
		}
	}
	return out, nil
}

// confineSelf runs the runner again as root of a new user and mount
// namespace mapped onto the host uids [base, base+65536) (sandbox
// ConfineAttr), with the same arguments and environment, after
// delegating control groups to it; it waits for it, passing on SIGTERM
// and SIGINT, and exits with its status. This is how the runner starts in
// its container (real root there), so that nothing of it runs as real
// root afterwards but this waiting parent.
func confineSelf(base int, log *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg, err := config.LoadE()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	// The work directory is the confined runner's own.
	if err := os.MkdirAll(cfg.Runner.WorkDir, 0o700); err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	if err := os.Chown(cfg.Runner.WorkDir, base, base); err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	env := os.Environ()
	attr := sandbox.ConfineAttr(base, 65536)
	attr.Setpgid = false
	if os.Getenv("NOETL_SANDBOX_CGROUP") == "" {
		spec, leaf, err := sandbox.Delegate(fmt.Sprintf("noetl-runner-%d", os.Getpid()), base)
		switch {
		case err != nil:
			log.Info("runner: no control groups to delegate; tasks get rlimits only", "reason", err.Error())
		default:
			env = append(env, "NOETL_SANDBOX_CGROUP="+spec)
			defer sandbox.Undelegate(spec)
			if leaf != nil {
				defer leaf.Close()
				attr.UseCgroupFD, attr.CgroupFD = true, int(leaf.Fd())
			}
		}
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("confine the runner (user namespace onto uids %d+): %w", base, err)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitCode(ee.ExitCode())
	}
	return err
}

// exitCode is the error of a confined runner that exited with a status:
// main exits with the same status.
type exitCode int

func (e exitCode) Error() string {
	return fmt.Sprintf("the confined runner exited with status %d", int(e))
}

// toolOptions are the runner kinds' options from cfg: the interpreter
// (NOETL_PYTHON), the data roots (NOETL_RUNNER_DATA_ROOTS), DuckDB's
// threads, spill budget and warm workers (NOETL_DUCKDB_THREADS,
// NOETL_DUCKDB_MAX_TEMP_MB, NOETL_DUCKDB_WARM_WORKERS), the warm python
// interpreters (NOETL_PYTHON_WARM_INTERPRETERS) and the warm sandboxes'
// max age (NOETL_SANDBOX_WARM_MAX_AGE_S), the
// runner's work directory (NOETL_RUNNER_WORK_DIR: the kinds' temporary
// files), sb its sandbox, policy its egress, reserved the engine's result
// buckets and newWorkspace a task's workspace.
func toolOptions(cfg config.Config, sb *sandbox.Sandbox, policy *egress.Policy, reserved []string, newWorkspace func() (*sandbox.Workspace, error)) kinds.Options {
	work := cfg.Runner.WorkDir
	warmMaxAge := time.Duration(cfg.Sandbox.WarmMaxAgeS) * time.Second
	return kinds.Options{
		PythonBin:   cfg.PythonBin,
		Credentials: server.GrantedStore{},
		Project:     cfg.Project,
		ScriptDir:   cfg.RepoRoot,
		Egress:      policy,
		DataRoots:   cfg.Sandbox.DataRoots,
		// Python tasks take an interpreter started ahead of demand in a
		// room and workspace of its own (NOETL_PYTHON_WARM_INTERPRETERS),
		// one per task, replaced after NOETL_SANDBOX_WARM_MAX_AGE_S idle,
		// forked from a zygote (NOETL_PYTHON_ZYGOTE).
		Python: python.Options{Sandbox: sb, TempDir: work, Warm: cfg.PythonWarm, WarmMaxAge: warmMaxAge, Workspaces: newWorkspace, Zygote: cfg.PythonZygote},
		Shell:  shell.Options{Sandbox: sb, TempDir: work},
		// The engine's result buckets are out of the runner's reach (no
		// role in GCP, another server on the stack: only signed URLs of
		// single objects reach them); gcs tasks naming one are refused by
		// name too (kind forbidden).
		GCS:  gcs.Options{ReservedBuckets: reserved},
		HTTP: httptool.Options{AllowLinkLocal: cfg.HTTPAllowLinkLocal}, // NOETL_HTTP_ALLOW_LINK_LOCAL
		// DuckDB runs in a worker per task, in a room of the sandbox:
		// the task's memory is its control group's (the sandbox's
		// memory limit); DuckDB's own limit only decides when it spills.
		DuckDB: duckdb.Options{TempDir: work, MemoryLimit: fmt.Sprintf("%dMB", duckDBMemoryMB(cfg)), Threads: cfg.DuckDB.Threads,
			MaxTempBytes: int64(cfg.DuckDB.MaxTempMB) << 20, DataRoots: cfg.Sandbox.DataRoots, Sandbox: sb,
			Warm: cfg.DuckDB.WarmWorkers, WarmMaxAge: warmMaxAge, Workspaces: newWorkspace},
	}
}

// tokenVerifier verifies the runner's callers' ID tokens: audience
// NOETL_RUNNER_AUDIENCE, caller NOETL_RUNNER_INVOKER, keys from the JWK
// set NOETL_RUNNER_JWKS_FILE (empty: Google's certificates). Errors: an
// unreadable key set.
func tokenVerifier(ctx context.Context, cfg config.Config) (*server.TokenVerifier, error) {
	return server.NewTokenVerifier(ctx, cfg.Runner.Audience, cfg.Runner.Invoker, cfg.Runner.JWKSFile)
}
