package stack

import (
	"cloud.google.com/go/storage"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/noetl/gcpengine/emulators/chaos"
	"github.com/noetl/gcpengine/shared/faults"

	"cloud.google.com/go/pubsub/v2"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
	"github.com/noetl/gcpengine/emulators/fixtures"
	"github.com/noetl/gcpengine/runner/sandbox"
)

// Supervisor brings the local stack up, keeps it up and takes it down. Create
// it with NewSupervisor and call Run.
type Supervisor struct {
	cfg Config
	log *slog.Logger
	out io.Writer // progress lines for humans

	mu       sync.Mutex
	stopping bool
	started  bool // preflight passed: shutdown has something to report
	files    []*os.File

	pubsub, firestore *proc
	gcs               *fakestorage.Server
	tasks             *cloudtasks.Server
	fixtures          *http.Server
	gateway           *http.Server    // the results gateway (gateway.go)
	gatewayGCS        *storage.Client // its client of the GCS emulator
	pg                *Postgres
	nats              *natsServer
	dataGCS           *fakestorage.Server
	dataPubSub        *dataPubSub
	dataKafka         *kfake.Cluster
	dataS3            *s3Server
	runner            *restarter
	runnerCgroup      string
	fn                *restarter
	psClient          *pubsub.Client
	bridges           []*Bridge
	stopBridges       context.CancelFunc
	bridgesDone       sync.WaitGroup

	fatal chan error // an emulator died
}

// NewSupervisor returns a supervisor for cfg that logs JSON to log and
// writes progress lines to out.
func NewSupervisor(cfg Config, log *slog.Logger, out io.Writer) *Supervisor {
	return &Supervisor{cfg: cfg, log: log, out: out, fatal: make(chan error, 2)}
}

func (s *Supervisor) progress(format string, args ...any) {
	fmt.Fprintf(s.out, "stack: "+format+"\n", args...)
}

// componentLogger returns a JSON logger writing to .stack/logs/<name>.log.
func (s *Supervisor) componentLogger(name string) (*slog.Logger, *os.File, error) {
	f, err := os.OpenFile(s.cfg.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	s.files = append(s.files, f)
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: s.cfg.LogLevel})).With("component", name), f, nil
}

// Run starts every component in order, provisions them, writes .stack/env
// and .stack/ready, and then keeps the stack up until ctx ends (SIGTERM,
// SIGINT) or an emulator dies. Whatever it started, except PostgreSQL, is
// stopped before it returns.
//
// Errors are also printed as a progress line ("stack: ERROR: ...").
func (s *Supervisor) Run(ctx context.Context) (err error) {
	t0 := time.Now()
	defer func() {
		var r reportedError
		if err != nil && !errors.As(err, &r) {
			s.progress("ERROR: %v", err)
		}
	}()
	for _, d := range []string{s.cfg.StackDir, s.cfg.LogDir(), filepath.Join(s.cfg.StackDir, "bin"), filepath.Join(s.cfg.StackDir, "pids")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	_ = os.Remove(s.cfg.ReadyFile())
	if err := os.WriteFile(s.cfg.PIDFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(s.cfg.PIDFile())
	if n := killOwned(s.cfg.StackDir, 10*time.Second); n > 0 {
		s.progress("stopped %d process(es) left behind by an earlier run", n)
	}
	defer s.shutdown()

	if err := s.preflight(); err != nil {
		return err
	}
	s.started = true
	if err := s.cfg.EnsureSecrets(); err != nil {
		return err
	}
	if err := s.cfg.WriteRoles(); err != nil {
		return fmt.Errorf("roles file: %w", err)
	}
	// The environment holds the signing key and the api token: owner only.
	if err := writeFileAtomic(s.cfg.EnvFile(), []byte(s.cfg.EnvFileContent()), 0o600); err != nil {
		return err
	}
	// Keys, logs and emulator data are closed to other users (the
	// runner's uids among them).
	if err := protectStackDir(s.cfg); err != nil {
		return err
	}
	s.progress("starting the local stack for project %s (state in %s)", s.cfg.Project, s.cfg.StackDir)
	if len(s.cfg.DevEgressAllow) > 0 {
		s.progress("egress: user code may also reach %s (scripts/up --allow, NOETL_EGRESS_ALLOW): runner tasks and http tasks; the engine's own endpoints stay refused (%s)",
			strings.Join(s.cfg.DevEgressAllow, ", "), strings.Join(s.cfg.EgressDeny(), ", "))
	}

	type stepFn struct {
		name, log string
		run       func(context.Context) (string, error)
	}
	parts := []stepFn{
		{"Pub/Sub emulator", "pubsub", s.upPubSub},
		{"Firestore emulator", "firestore", s.upFirestore},
		{"GCS (fake-gcs-server)", "gcs", s.upGCS},
		{"results gateway (signed URLs)", "gateway", s.upGateway},
		{"Cloud Tasks emulator", "cloudtasks", s.upTasks},
		{"fixtures", "fixtures", s.upFixtures},
		{"PostgreSQL", "postgres", s.upPostgres},
		{"NATS", "nats", s.upNATS},
		{"user data (GCS, Pub/Sub, Kafka, S3)", "data", s.upData},
		{"runner", "runner", s.upRunner},
		{"functions", "functions", s.upFunctions},
	}
	steps := len(parts)
	for i, st := range parts {
		s.progress("[%d/%d] %s: starting", i+1, steps, st.name)
		t := time.Now()
		detail, err := st.run(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while starting %s", st.name)
			}
			logPath := s.cfg.LogPath(st.log)
			err = fmt.Errorf("%s failed to start: %w (log: %s)", st.name, err, logPath)
			s.progress("ERROR: %v", err)
			if t := tail(logPath, 15); t != "" {
				s.progress("last lines of %s:", logPath)
				for _, line := range strings.Split(t, "\n") {
					s.progress("  | %s", line)
				}
			}
			return reportedError{err}
		}
		s.progress("[%d/%d] %s: ready%s (%.1fs)", i+1, steps, st.name, detail, time.Since(t).Seconds())
	}
	if err := s.startBridges(); err != nil {
		return err
	}
	s.progress("ready in %.1fs; environment in %s", time.Since(t0).Seconds(), s.cfg.EnvFile())
	ready := fmt.Sprintf("pid=%d\nstarted=%s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := writeFileAtomic(s.cfg.ReadyFile(), []byte(ready), 0o644); err != nil {
		return err
	}
	s.log.Info("stack ready", "seconds", time.Since(t0).Seconds())

	select {
	case <-ctx.Done():
		s.progress("stopping (signal)")
		return nil
	case err := <-s.fatal:
		s.progress("ERROR: %v; stopping the stack", err)
		return err
	}
}

// reportedError is an error Run has already printed as progress.
type reportedError struct{ error }

// Unwrap returns the underlying error.
func (e reportedError) Unwrap() error { return e.error }

// lock takes an exclusive lock on .stack/stack.lock so that one supervisor
// runs per stack directory.
func (s *Supervisor) lock() (func(), error) {
	path := filepath.Join(s.cfg.StackDir, "stack.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		pid, _ := os.ReadFile(s.cfg.PIDFile())
		return nil, fmt.Errorf("another stack supervisor (pid %s) already runs on %s; stop it with scripts/down", strings.TrimSpace(string(pid)), s.cfg.StackDir)
	}
	return func() { f.Close() }, nil
}

// preflight checks tools and ports before anything starts.
func (s *Supervisor) preflight() error {
	var errs []error
	if _, err := exec.LookPath(s.cfg.Gcloud); err != nil {
		errs = append(errs, fmt.Errorf("%s not found: install the Debian packages google-cloud-cli, google-cloud-cli-pubsub-emulator and google-cloud-cli-firestore-emulator (or set NOETL_GCLOUD)", s.cfg.Gcloud))
	}
	if _, err := exec.LookPath("java"); err != nil {
		errs = append(errs, errors.New("java not found: the Pub/Sub and Firestore emulators need a Java runtime (Debian package openjdk-17-jre-headless)"))
	}
	pg, err := NewPostgres(s.cfg)
	if err != nil {
		errs = append(errs, err)
	} else {
		s.pg = pg
	}
	for _, p := range s.cfg.Ports() {
		if p.EnvVar == "NOETL_PG_PORT" && s.pg != nil && s.pg.RunningPort() == p.Port {
			continue // our own PostgreSQL, left running by design
		}
		if err := portFree(p.Port); err != nil {
			errs = append(errs, fmt.Errorf("port %d (%s, %s) is already in use by another process; stop it or choose another port, e.g. %s=%d scripts/up",
				p.Port, p.EnvVar, p.Name, p.EnvVar, p.Port+1000))
		}
	}
	return errors.Join(errs...)
}

// portFree reports an error if 127.0.0.1:port cannot be bound.
func portFree(port int) error {
	l, err := net.Listen("tcp", hostPort(port))
	if err != nil {
		return err
	}
	return l.Close()
}

func (s *Supervisor) upPubSub(ctx context.Context) (string, error) {
	p, err := s.startPubSub(ctx)
	if err != nil {
		return "", err
	}
	s.pubsub = p
	s.watch(p)
	s.psClient, err = NewPubSubClient(ctx, s.cfg.Project, hostPort(s.cfg.PubSubPort))
	if err != nil {
		return "", err
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := ProvisionPubSub(pctx, s.psClient, s.cfg.Project); err != nil {
		return "", err
	}
	return fmt.Sprintf(" on %s; topics %s, %s, %s, %s; subscriptions %s, %s, %s",
		hostPort(s.cfg.PubSubPort), EventsTopic, CommandsTopic, EventsDeadTopic, CommandsDeadTopic, RouteSub, MaterializeSub, DispatchSub), nil
}

func (s *Supervisor) upFirestore(ctx context.Context) (string, error) {
	p, err := s.startFirestore(ctx)
	if err != nil {
		return "", err
	}
	s.firestore = p
	s.watch(p)
	return " on " + hostPort(s.cfg.FirestorePort), nil
}

// watch reports an emulator's unexpected exit as fatal.
func (s *Supervisor) watch(p *proc) {
	go func() {
		<-p.done
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if !stopping {
			s.log.Error("emulator exited unexpectedly", "component", p.name, "status", fmt.Sprint(p.err), "log", p.logPath)
			s.fatal <- fmt.Errorf("%s emulator exited unexpectedly (%v); see %s", p.name, p.err, p.logPath)
		}
	}()
}

func (s *Supervisor) upGCS(ctx context.Context) (string, error) {
	opts := fakestorage.Options{
		Scheme:     "http",
		Host:       "127.0.0.1",
		Port:       uint16(s.cfg.GCSPort),
		PublicHost: hostPort(s.cfg.GCSPort),
	}
	if s.cfg.LogLevel <= slog.LevelDebug {
		_, f, err := s.componentLogger("gcs")
		if err != nil {
			return "", err
		}
		opts.Writer = f // fake-gcs-server's access log
	}
	srv, err := fakestorage.NewServerWithOptions(opts)
	if err != nil {
		return "", err
	}
	s.gcs = srv
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ProvisionBucket(pctx, s.cfg.Project, s.cfg.GCSPort, s.cfg.ResultsBucket); err != nil {
		return "", fmt.Errorf("create bucket %s: %w", s.cfg.ResultsBucket, err)
	}
	return fmt.Sprintf(" on %s; bucket %s", hostPort(s.cfg.GCSPort), s.cfg.ResultsBucket), nil
}

func (s *Supervisor) upTasks(ctx context.Context) (string, error) {
	lg, _, err := s.componentLogger("cloudtasks")
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", hostPort(s.cfg.TasksPort))
	if err != nil {
		return "", err
	}
	var in *chaos.Injector
	if s.cfg.Chaos.Enabled() {
		in = chaos.New(s.cfg.Chaos)
	}
	signer, err := newOIDCSigner(s.cfg)
	if err != nil {
		return "", err
	}
	s.tasks = cloudtasks.NewServer(cloudtasks.Options{Logger: lg, Chaos: in, OIDC: signer})
	go func() {
		if err := s.tasks.Serve(l); err != nil {
			lg.Error("cloud tasks server ended", "error", err)
		}
	}()
	c, err := NewTasksClient(ctx, hostPort(s.cfg.TasksPort))
	if err != nil {
		return "", err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ProvisionTasks(pctx, c, s.cfg.Project, s.cfg.Location, s.cfg.WorkConcurrency, s.cfg.TasksMaxAttempts); err != nil {
		return "", err
	}
	return fmt.Sprintf(" on %s; queues %s, %s in projects/%s/locations/%s (max_concurrent_dispatches %d); OIDC tokens of %s (JWK set %s)",
		hostPort(s.cfg.TasksPort), WorkQueue, TimersQueue, s.cfg.Project, s.cfg.Location, s.cfg.WorkConcurrency, s.cfg.TasksServiceAccount(), s.cfg.JWKSFile()), nil
}

func (s *Supervisor) upFixtures(ctx context.Context) (string, error) {
	lg, _, err := s.componentLogger("fixtures")
	if err != nil {
		return "", err
	}
	opts := s.cfg.Fixtures
	opts.Logger = lg
	l, err := net.Listen("tcp", hostPort(s.cfg.FixturesPort))
	if err != nil {
		return "", err
	}
	s.fixtures = &http.Server{Handler: fixtures.NewHandler(opts), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.fixtures.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			lg.Error("fixtures server ended", "error", err)
		}
	}()
	if err := waitReady(ctx, 10*time.Second, nil, func(ctx context.Context) error { return httpOK(ctx, s.cfg.FixturesURL()+"/healthz") }); err != nil {
		return "", err
	}
	return fmt.Sprintf(" at %s (countries fail rate %.2f)", s.cfg.FixturesURL(), opts.FailRate), nil
}

func (s *Supervisor) upPostgres(ctx context.Context) (string, error) {
	started, err := s.pg.Start(ctx)
	if err != nil {
		return "", err
	}
	applied, err := s.pg.Provision(ctx, filepath.Join(s.cfg.RepoRoot, "emulators", "stack", "sql"))
	if err != nil {
		return "", err
	}
	how := "started"
	if !started {
		how = "already running"
	}
	user := ""
	if s.pg.runAs != "" {
		user = ", running as " + s.pg.runAs
	}
	return fmt.Sprintf(" on %s (%s%s; data %s; applied %s)", hostPort(s.cfg.PGPort), how, user, s.pg.DataDir, strings.Join(applied, ", ")), nil
}

func (s *Supervisor) upFunctions(ctx context.Context) (string, error) {
	if _, err := os.Stat(s.cfg.FunctionsBin); err != nil {
		s.progress("building the functions server: go build -o %s ./cmd/local", s.cfg.FunctionsBin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.cfg.FunctionsBin, "./cmd/local")
		cmd.Dir = s.cfg.RepoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./cmd/local: %v\n%s", err, out)
		}
	}
	s.fn = &restarter{s: s, name: "functions", health: s.cfg.FunctionsURL() + "/api/healthz", spawn: func() (*proc, error) {
		env := childEnv(s.cfg.StackDir, s.cfg.Env())
		p, err := startProc("functions", []string{s.cfg.FunctionsBin}, env, s.cfg.RepoRoot, s.cfg.LogPath("functions"))
		if err != nil {
			return nil, err
		}
		s.writeGroupFile("functions", p.pgid)
		return p, nil
	}}
	if err := s.fn.start(ctx); err != nil {
		return "", err
	}
	return " at " + s.cfg.FunctionsURL(), nil
}

// startBridges starts one push bridge per subscription.
func (s *Supervisor) startBridges() error {
	lg, _, err := s.componentLogger("bridge")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopBridges = cancel
	for _, spec := range Subscriptions {
		b, err := NewBridge(BridgeOptions{
			Client:          s.psClient,
			Project:         s.cfg.Project,
			Subscription:    spec.Name,
			Topic:           spec.Topic,
			Endpoint:        PushEndpoint(s.cfg.FunctionsURL()+spec.Path, s.cfg.Project, spec.Topic),
			DeadLetterTopic: spec.DeadLetter,
			Concurrency:     s.cfg.PushConcurrency,
			MaxAttempts:     s.cfg.PushMaxAttempts,
			MinBackoff:      s.cfg.PushMinBackoff,
			MaxBackoff:      s.cfg.PushMaxBackoff,
			Filter:          spec.Filter,
			Chaos:           s.chaosInjector(),
			Logger:          lg,
		})
		if err != nil {
			return err
		}
		s.bridges = append(s.bridges, b)
		s.bridgesDone.Add(1)
		go func() {
			defer s.bridgesDone.Done()
			_ = b.Run(ctx)
		}()
	}
	s.progress("push bridges: %s → %s (filter %s), %s → /materialize/..., %s → /dispatch/... (Pub/Sub push bodies, %d concurrent per subscription)",
		RouteSub, PushEndpoint(s.cfg.FunctionsURL()+"/route", s.cfg.Project, EventsTopic), RouteFilter, MaterializeSub, DispatchSub, s.cfg.PushConcurrency)
	if s.cfg.Chaos.Enabled() {
		s.progress("delivery chaos (%s): %s in the push bridges and the Cloud Tasks emulator", chaos.Env, s.cfg.Chaos)
	}
	// Registered kind: Subscription resources need no bridge: the Pub/Sub
	// emulator delivers their push subscriptions itself. The ticker stands
	// in for the deployment's Cloud Scheduler job (tick.go).
	tk := &Ticker{URL: s.cfg.FunctionsURL() + "/subscribe/tick", Every: s.cfg.SubscribeTick, Log: lg}
	s.bridgesDone.Add(1)
	go func() {
		defer s.bridgesDone.Done()
		tk.Run(ctx)
	}()
	s.progress("subscriptions: the Pub/Sub emulator pushes to %s/subscribe/push/<name>; ticking %s/subscribe/tick every %s", s.cfg.FunctionsURL(), s.cfg.FunctionsURL(), s.cfg.SubscribeTick)
	return nil
}

// chaosInjector returns a fault injector for one delivery path, or nil.
func (s *Supervisor) chaosInjector() *chaos.Injector {
	if !s.cfg.Chaos.Enabled() {
		return nil
	}
	return chaos.New(s.cfg.Chaos)
}

// shutdown stops everything Run started, in reverse order, except
// PostgreSQL (scripts/down stops it).
func (s *Supervisor) shutdown() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	_ = os.Remove(s.cfg.ReadyFile())
	if s.stopBridges != nil {
		s.stopBridges()
		done := make(chan struct{})
		go func() { s.bridgesDone.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			s.log.Warn("push bridges did not stop within 15s")
		}
		for _, b := range s.bridges {
			s.log.Info("bridge stopped", "stats", fmt.Sprintf("%+v", b.Stats()))
		}
	}
	if s.fn != nil {
		s.fn.stop()
	}
	if s.runner != nil {
		s.runner.stop()
	}
	if s.runnerCgroup != "" {
		sandbox.Undelegate(s.runnerCgroup)
	}
	if s.dataPubSub != nil {
		_ = s.dataPubSub.Close()
	}
	if s.dataGCS != nil {
		s.dataGCS.Stop()
	}
	if s.dataKafka != nil {
		s.dataKafka.Close()
	}
	if s.dataS3 != nil {
		s.dataS3.stop()
	}
	if s.fixtures != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.fixtures.Shutdown(ctx)
		cancel()
	}
	if s.gateway != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.gateway.Shutdown(ctx)
		cancel()
	}
	if s.gatewayGCS != nil {
		_ = s.gatewayGCS.Close()
	}
	if s.tasks != nil {
		s.tasks.Stop()
	}
	if s.nats != nil {
		s.nats.stop()
	}
	if s.gcs != nil {
		s.gcs.Stop()
	}
	if s.psClient != nil {
		_ = s.psClient.Close()
	}
	for _, p := range []*proc{s.firestore, s.pubsub} {
		if p != nil {
			p.stop(15 * time.Second)
			s.removeGroupFile(p.name)
		}
	}
	if n := killOwned(s.cfg.StackDir, 10*time.Second); n > 0 {
		s.log.Warn("killed leftover child processes", "count", n)
	}
	for _, f := range s.files {
		_ = f.Close()
	}
	if s.started {
		s.progress("stopped (PostgreSQL keeps running; scripts/down stops it)")
	}
}

// restarter runs one of the stack's processes (the functions server, the
// runner) and restarts it when it exits.
type restarter struct {
	s      *Supervisor
	name   string
	health string // URL that answers 2xx when the process is ready
	spawn  func() (*proc, error)

	mu       sync.Mutex
	cur      *proc
	stopping bool
	loopDone chan struct{}
}

func (f *restarter) healthy(ctx context.Context, p *proc, timeout time.Duration) error {
	return waitReady(ctx, timeout, p, func(ctx context.Context) error { return httpOK(ctx, f.health) })
}

// start launches the process, waits until its health URL answers, then
// supervises it.
func (f *restarter) start(ctx context.Context) error {
	p, err := f.spawn()
	if err != nil {
		return err
	}
	if err := f.healthy(ctx, p, 60*time.Second); err != nil {
		p.stop(5 * time.Second)
		return err
	}
	f.cur = p
	f.loopDone = make(chan struct{})
	go f.loop(p)
	return nil
}

// loop restarts the server whenever it exits: after 100 ms when it
// crashed on purpose (an injected fault, exit code faults.ExitCode), after
// 1 s when it had run for 5 s or more (a dying instance: the soak kills
// it), and with backoff while it keeps exiting within 5 s of its start (a
// crash loop: 1 s doubling to 30 s).
func (f *restarter) loop(p *proc) {
	defer close(f.loopDone)
	lg := f.s.log
	wait := time.Second
	for {
		<-p.done
		f.mu.Lock()
		if f.stopping {
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if time.Since(p.started) >= 5*time.Second {
			wait = time.Second
		}
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.ExitCode() == faults.ExitCode {
			// An injected crash (NOETL_FAULTS): restart at once.
			wait = 100 * time.Millisecond
		}
		lg.Error(f.name+" exited; restarting", "status", fmt.Sprint(p.err), "uptime", time.Since(p.started).String(), "restart_in", wait.String(), "log", p.logPath)
		time.Sleep(wait)
		wait = min(2*max(wait, time.Second/2), 30*time.Second)
		f.mu.Lock()
		if f.stopping {
			f.mu.Unlock()
			return
		}
		np, err := f.spawn()
		if err != nil {
			f.mu.Unlock()
			lg.Error(f.name+" restart failed", "error", err)
			p = &proc{done: closedChan(), started: time.Now(), logPath: f.s.cfg.LogPath(f.name)}
			continue
		}
		f.cur = np
		f.mu.Unlock()
		p = np
		go func() {
			if err := f.healthy(context.Background(), np, 60*time.Second); err == nil {
				lg.Info(f.name+" restarted and healthy", "pid", np.cmd.Process.Pid)
			}
		}()
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// stop ends supervision and stops the server.
func (f *restarter) stop() {
	f.mu.Lock()
	f.stopping = true
	p := f.cur
	f.mu.Unlock()
	if p != nil {
		p.stop(10 * time.Second)
		f.s.removeGroupFile(f.name)
	}
	if f.loopDone != nil {
		<-f.loopDone
	}
}
