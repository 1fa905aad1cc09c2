package stack

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/grpc"

	"github.com/noetl/gcpengine/emulators/pubsubrest"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/oidc"
)

// The data plane of the local stack (README "Architecture"): the runner,
// a separate process started by the supervisor as root of a user
// namespace mapped onto an unprivileged host uid range (RunnerUID), with
// an environment built from scratch (RunnerEnv: no signing key, no api
// token, no emulator host, no cloud identity), a work directory of its
// own, control groups delegated to it, and the fakes of user data it may
// reach (a fake GCS and a fake Pub/Sub of their own, not the engine's).

// RunnerURL is the runner's base URL (execute's NOETL_RUNNER_URL, the
// audience of its tokens).
func (c Config) RunnerURL() string { return "http://" + hostPort(c.RunnerPort) }

// RunnerInvoker is the service account execute's runner tokens name (as
// terraform/ names execute's).
func (c Config) RunnerInvoker() string {
	return "noetl-execute@" + c.Project + ".iam.gserviceaccount.com"
}

// RunnerKeyFile is execute's private key for its runner tokens (mode
// 0600, root's: the runner cannot read it); RunnerJWKSFile its public
// half, which the runner verifies tokens with.
func (c Config) RunnerKeyFile() string { return filepath.Join(c.StackDir, "runner-auth", "key.pem") }

// RunnerJWKSFile: see RunnerKeyFile.
func (c Config) RunnerJWKSFile() string { return filepath.Join(c.StackDir, "runner-auth", "jwks.json") }

// RunnerWorkDir is the runner's own directory (owned by RunnerUID, mode
// 0700): its tasks' workspaces and its sandbox's files.
func (c Config) RunnerWorkDir() string { return filepath.Join(c.StackDir, "runner") }

// DataGCSURL is the base URL of the fake GCS of user data.
func (c Config) DataGCSURL() string { return "http://" + hostPort(c.DataGCSPort) }

// EgressAllow are the destinations user code may reach on the stack: its
// PostgreSQL and NATS, the fake GCS, Pub/Sub, Kafka and S3 of user data,
// the fixture API, and the results gateway (which serves only URLs execute
// signed for one object and one attempt, gateway.go).
// The developer's own destinations (DevEgressAllow: scripts/up --allow,
// NOETL_EGRESS_ALLOW) follow the stack's; both planes get the same list
// (the runner's environment, and the functions' for the http kind).
func (c Config) EgressAllow() []string {
	return append(c.baseEgressAllow(), c.DevEgressAllow...)
}

func (c Config) baseEgressAllow() []string {
	return []string{hostPort(c.PGPort), hostPort(c.NATSPort), hostPort(c.DataGCSPort), hostPort(c.DataPubSubPort), hostPort(c.KafkaPort), hostPort(c.S3Port), hostPort(c.FixturesPort),
		hostPort(c.ResultsGatewayPort)}
}

// devEgressAllow reads the developer's destinations from list (the
// comma-separated NOETL_EGRESS_ALLOW scripts/up passes, its --allow flags
// included): each a rule of the egress policy (host, host:port, address,
// CIDR, with :port), the stack's own entries and repeats dropped. A rule
// that names one of the engine's own endpoints (EgressDeny: directly, or
// as another loopback or unspecified address or a name resolving to one,
// on its port) is an error: the policy refuses it whatever the list says,
// so asking for it is a mistake to report, not to ignore. A rule wider
// than one destination (no port, a prefix) is kept; the deny-list still
// refuses the engine's endpoints inside it.
func (c Config) devEgressAllow(list string) ([]string, error) {
	base := map[string]bool{}
	for _, b := range c.baseEgressAllow() {
		base[b] = true
	}
	names := map[int]string{}
	for _, p := range c.Ports() {
		names[p.Port] = p.Name
		if p.EnvVar == "NOETL_FUNCTIONS_PORT" {
			names[p.Port] = "functions host (api, execute, ...)"
		}
	}
	var out []string
	var errs []error
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" || base[item] {
			continue
		}
		base[item] = true
		p, err := egress.New("local", []string{item}, c.EgressDeny())
		if err != nil {
			errs = append(errs, fmt.Errorf("NOETL_EGRESS_ALLOW (scripts/up --allow) %q: %v", item, err))
			continue
		}
		r := p.Allow[0]
		host := r.Host
		if host == "" && r.Prefix.IsSingleIP() {
			host = r.Prefix.Addr().String()
		}
		if r.Port != 0 && host != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := p.Resolve(ctx, host, int(r.Port))
			cancel()
			var re *egress.RefusedError
			if errors.As(err, &re) && re.Denied {
				errs = append(errs, fmt.Errorf("NOETL_EGRESS_ALLOW (scripts/up --allow) %q: port %d is the stack's %s, one of the engine's own endpoints: user code never reaches it", item, r.Port, names[int(r.Port)]))
				continue
			}
		}
		out = append(out, item)
	}
	return out, errors.Join(errs...)
}

// EgressDeny are the engine's own endpoints, refused to user code
// whatever the allow-list says: the functions host, the Firestore,
// Pub/Sub, GCS and Cloud Tasks emulators, and the runner itself.
func (c Config) EgressDeny() []string {
	return []string{hostPort(c.FunctionsPort), hostPort(c.FirestorePort), hostPort(c.PubSubPort), hostPort(c.GCSPort), hostPort(c.TasksPort), hostPort(c.RunnerPort)}
}

// passEnv are the supervisor's variables (prefixes ending in _) passed on
// to the runner: its own knobs, never anything else.
var passEnv = []string{"NOETL_SANDBOX_", "NOETL_DUCKDB_", "NOETL_RUNNER_DATA_ROOTS", "NOETL_PYTHON", "NOETL_PYTHON_WARM_INTERPRETERS", "NOETL_PYTHON_ZYGOTE", "NOETL_HTTP_ALLOW_LINK_LOCAL", "NOETL_LOGGING_", "NOETL_LOG_LEVEL", "NOETL_TIMEOUTS_",
	// The connection quotas.
	"NOETL_RUNNER_TASK_CONNECTIONS", "NOETL_RUNNER_EXECUTION_CONNECTIONS",
	// The cell map: the runner refuses its buckets by name.
	"NOETL_RESULT_CELLS_FILE"}

// RunnerEnv is the runner's whole environment, built from scratch: its
// knobs, PATH and LANG, and the ownership marker of the stack's
// processes. Nothing of the supervisor's environment but passEnv.
func (c Config) RunnerEnv(cgroup string) []string {
	work := c.RunnerWorkDir()
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
		"HOME=" + work,
		"TMPDIR=" + filepath.Join(work, "tmp"),
		"GOOGLE_CLOUD_PROJECT=" + c.Project,
		"NOETL_REPO_ROOT=" + c.RepoRoot,
		// The engine's bucket, which gcs tasks are refused by name.
		"NOETL_RESULTS_BUCKET=" + c.ResultsBucket,
		"NOETL_RUNNER_URL=" + c.RunnerURL(),
		"NOETL_RUNNER_AUDIENCE=" + c.RunnerURL(),
		"NOETL_RUNNER_INVOKER=" + c.RunnerInvoker(),
		"NOETL_RUNNER_JWKS_FILE=" + c.RunnerJWKSFile(),
		"NOETL_RUNNER_WORK_DIR=" + filepath.Join(work, "work"),
		"NOETL_EGRESS_PROFILE=local",
		"NOETL_EGRESS_ALLOW=" + strings.Join(c.EgressAllow(), ","),
		"NOETL_EGRESS_DENY=" + strings.Join(c.EgressDeny(), ","),
		ownerEnv + "=" + c.StackDir,
	}
	if cgroup != "" {
		env = append(env, "NOETL_SANDBOX_CGROUP="+cgroup)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range passEnv {
			if k == p || (strings.HasSuffix(p, "_") && strings.HasPrefix(k, p)) {
				if k != "NOETL_SANDBOX_CGROUP" || cgroup == "" {
					env = append(env, kv)
				}
				break
			}
		}
	}
	return env
}

// newRunnerKeys makes execute's key for its runner tokens (a new one per
// start, like the Cloud Tasks emulator's) and publishes its JWK set.
func newRunnerKeys(c Config) error {
	_, s, err := newKeyFile(c.RunnerKeyFile(), 0o755)
	if err != nil {
		return fmt.Errorf("runner key: %w", err)
	}
	jwks, err := s.JWKS()
	if err != nil {
		return err
	}
	return writeFileAtomic(c.RunnerJWKSFile(), jwks, 0o644)
}

// newKeyFile makes a new RSA key and writes it as PEM to path (mode
// 0600; its directory is created with dirMode).
func newKeyFile(path string, dirMode os.FileMode) (*rsa.PrivateKey, *oidc.Signer, error) {
	key, err := oidc.GenerateKey()
	if err != nil {
		return nil, nil, err
	}
	s, err := oidc.NewSigner(key)
	if err != nil {
		return nil, nil, err
	}
	pem, err := s.PrivateKeyPEM()
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, nil, err
	}
	return key, s, writeFileAtomic(path, pem, 0o600)
}

// protectStackDir closes the stack directory's secrets and logs to other
// users (the runner's uids among them): the directory itself can be
// traversed but not listed, its keys, environment, logs, traces and
// emulator data are root's only; its binaries and the public JWK sets stay
// readable.
func protectStackDir(c Config) error {
	if err := os.Chmod(c.StackDir, 0o711); err != nil {
		return err
	}
	for _, d := range []string{c.LogDir(), c.TraceDir(), filepath.Join(c.StackDir, "pubsub"), c.NATSStoreDir(), filepath.Join(c.StackDir, "pids")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	for _, f := range []string{c.EnvFile(), c.SigningKeyFile(), c.APITokenFile(), c.OIDCKeyFile(), c.RunnerKeyFile(), c.ResultsKeyFile()} {
		if err := os.Chmod(f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// openAncestors adds the others' search permission (o+x: traverse, not
// list) to every directory above p that lacks it, and returns those it
// changed.
func openAncestors(p string) ([]string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	var changed []string
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return changed, err
		}
		if m := fi.Mode().Perm(); m&0o001 == 0 {
			if err := os.Chmod(d, m|0o001); err != nil {
				return changed, fmt.Errorf("the runner cannot reach %s: %s is not traversable by other users and cannot be made so: %w", p, d, err)
			}
			changed = append(changed, d)
		}
		if d == filepath.Dir(d) {
			return changed, nil
		}
	}
}

// upData starts the fakes of user data: a fake-gcs-server and a Pub/Sub
// fake (pstest) of their own, the only GCS and Pub/Sub the runner reaches,
// a Kafka cluster (kfake) and an S3 store (gofakes3; kafkas3.go).
func (s *Supervisor) upData(ctx context.Context) (string, error) {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: uint16(s.cfg.DataGCSPort), PublicHost: hostPort(s.cfg.DataGCSPort)})
	if err != nil {
		return "", fmt.Errorf("data GCS: %w", err)
	}
	s.dataGCS = srv
	ps, err := newPubSubFake(hostPort(s.cfg.DataPubSubPort))
	if err != nil {
		return "", err
	}
	s.dataPubSub = ps
	k, err := startKafka(s.cfg)
	if err != nil {
		return "", err
	}
	s.dataKafka = k
	s3, err := startS3(s.cfg, s.log)
	if err != nil {
		return "", err
	}
	s.dataS3 = s3
	if err := waitReady(ctx, 10*time.Second, nil, func(ctx context.Context) error { return httpOK(ctx, s.cfg.S3URL()+"/") }); err != nil {
		return "", fmt.Errorf("data S3: %w", err)
	}
	return fmt.Sprintf(": GCS at %s, Pub/Sub at %s, Kafka at %s, S3 at %s", s.cfg.DataGCSURL(), hostPort(s.cfg.DataPubSubPort), s.cfg.KafkaBrokers(), s.cfg.S3URL()), nil
}

// newPubSubFake starts pstest and serves it on addr over gRPC and over
// Pub/Sub's REST API (emulators/pubsubrest: the subscription kind speaks
// REST), as Google's emulator serves both on one port.
func newPubSubFake(addr string) (*dataPubSub, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("data Pub/Sub on %s: %w", addr, err)
	}
	var gs *grpc.Server
	ps := pstest.NewServerWithCallback(0, func(s *grpc.Server) { gs = s })
	return &dataPubSub{ps: ps, hs: pubsubrest.Serve(ln, gs, &ps.GServer)}, nil
}

// dataPubSub is the stack's Pub/Sub of user data: pstest behind a
// listener that answers gRPC and REST.
type dataPubSub struct {
	ps *pstest.Server
	hs *http.Server
}

// Close stops the listener and pstest.
func (d *dataPubSub) Close() error {
	_ = d.hs.Close()
	return d.ps.Close()
}

// upRunner builds the runner if missing, makes execute's runner key,
// prepares the runner's directory (owned by its uid) and control groups
// (delegated to it), and starts it under supervision.
func (s *Supervisor) upRunner(ctx context.Context) (string, error) {
	c := s.cfg
	if _, err := os.Stat(c.RunnerBin); err != nil {
		s.progress("building the runner: go build -o %s ./runner", c.RunnerBin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", c.RunnerBin, "./runner")
		cmd.Dir = c.RepoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./runner: %v\n%s", err, out)
		}
	}
	if err := newRunnerKeys(c); err != nil {
		return "", err
	}
	// The runner's uid reaches its binary, its directory and the
	// repository's files (script: sources) only through directories it
	// may traverse: a checkout under a private directory (mktemp -d makes
	// 0700 ones) would keep it from starting at all.
	for _, p := range []string{c.RunnerBin, c.RunnerWorkDir(), c.RepoRoot} {
		opened, err := openAncestors(p)
		if err != nil {
			return "", err
		}
		for _, d := range opened {
			s.progress("made %s traversable by other users (o+x, not listable) so that the runner's uid reaches %s", d, p)
		}
	}
	work := c.RunnerWorkDir()
	for _, d := range []string{work, filepath.Join(work, "tmp"), filepath.Join(work, "work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
		if err := os.Chown(d, c.RunnerUID, c.RunnerUID); err != nil {
			return "", err
		}
	}
	for _, d := range []string{filepath.Join(work, "tmp"), filepath.Join(work, "work")} {
		stale, err := clearStale(d, c.RunnerUID)
		if err != nil {
			return "", err
		}
		for _, e := range stale {
			s.progress("removed %s: left by a runner of another uid range (another runner port: NOETL_RUNNER_UID follows it)", e)
		}
	}
	cg, _, err := sandbox.Delegate("noetl-runner-"+strconv.Itoa(c.RunnerPort), c.RunnerUID)
	if err != nil {
		s.log.Warn("no control groups for the runner's tasks; rlimits only", "error", err.Error())
		cg = ""
	}
	s.runnerCgroup = cg
	s.runner = &restarter{s: s, name: "runner", health: c.RunnerURL() + "/healthz", spawn: func() (*proc, error) {
		p, err := startProcAttr("runner", []string{c.RunnerBin, "--listen", hostPort(c.RunnerPort)}, c.RunnerEnv(cg), work, c.LogPath("runner"),
			sandbox.ConfineAttr(c.RunnerUID, 65536))
		if err != nil {
			return nil, err
		}
		s.writeGroupFile("runner", p.pgid)
		return p, nil
	}}
	if err := s.runner.start(ctx); err != nil {
		return "", err
	}
	how := "rlimits"
	if cg != "" {
		how = "control groups " + cg
	}
	return fmt.Sprintf(" at %s (host uid %d, user namespace of 65536 uids; %s; egress allow %s)", c.RunnerURL(), c.RunnerUID, how, strings.Join(c.EgressAllow(), ",")), nil
}

// startProcAttr is startProc with the process attributes attr (its
// Setpgid is forced: the stack stops its children by process group).
func startProcAttr(name string, argv, env []string, dir, logPath string, attr *syscall.SysProcAttr) (*proc, error) {
	attr.Setpgid = true
	return startProcWith(name, argv, env, dir, logPath, attr)
}

// clearStale removes what a runner of another uid range left in dir
// (one of the runner's own directories: its tmp and work): every entry
// not owned by uid, the host uid of this runner's uid 0 — its control
// files and uid reservations, its tasks' workspaces. The runner is not
// running yet, so nothing there is in use; it could neither use nor
// remove them (they belong to uids it does not map: it would refuse to
// start, or fail every task's workspace). It returns what it removed.
func clearStale(dir string, uid int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return removed, err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("stack: remove %s, left by a runner of another uid range: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
