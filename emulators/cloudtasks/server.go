// Package cloudtasks is an in-process emulator of the Google Cloud Tasks v2
// gRPC API (google.cloud.tasks.v2.CloudTasks) for HTTP-target tasks.
//
// Google ships no Cloud Tasks emulator. This package implements the service
// closely enough that the official Go client (cloud.google.com/go/cloudtasks/apiv2)
// cannot tell it from the real one:
//
//	srv := cloudtasks.NewServer(cloudtasks.Options{})
//	lis, _ := net.Listen("tcp", "127.0.0.1:8684")
//	go srv.Serve(lis)
//	defer srv.Stop()
//
//	client, _ := cloudtasks.NewClient(ctx, // the official client package
//		option.WithEndpoint(lis.Addr().String()),
//		option.WithoutAuthentication(),
//		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
//
// Queues and tasks live in memory. Each queue has a dispatcher goroutine that
// honours schedule_time, the queue state (PAUSED queues do not dispatch),
// RateLimits (token bucket of max_burst_size tokens refilled at
// max_dispatches_per_second; at most max_concurrent_dispatches requests in
// flight) and RetryConfig (exponential-then-linear backoff, max_attempts,
// max_retry_duration). Tasks are delivered as real HTTP requests carrying the
// X-CloudTasks-* headers documented for HTTP targets; a 2xx answer completes
// the task, anything else (including 3xx, a dispatch_deadline timeout or a
// connection error) is retried.
//
// OIDC: with Options.OIDC, a task (or its queue's HTTP target) with an
// oidc_token is dispatched with Authorization: Bearer <ID token> minted for
// each attempt (see OIDCSigner); without it the token settings are stored
// but no token is sent.
//
// Not emulated: App Engine tasks (CreateTask answers Unimplemented), OAuth
// access tokens (oauth_token), the Locations and Operations mixin services,
// and the adaptive "system throttling" the real service applies on 429/503
// responses.
package cloudtasks

import (
	"context"
	"errors"
	"github.com/noetl/gcpengine/emulators/chaos"
	"github.com/noetl/gcpengine/shared/errs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc"
)

// Default values applied by NewServer when the corresponding Options field is
// zero, and documented service limits.
const (
	// DefaultTombstoneTTL is how long the name of a completed or deleted task
	// stays reserved (CreateTask with that name answers AlreadyExists). The
	// real service documents "about one hour".
	DefaultTombstoneTTL = time.Hour
	// DefaultMinDispatchDeadline is the smallest dispatch_deadline the real
	// service accepts for HTTP tasks; shorter values are raised to it.
	DefaultMinDispatchDeadline = 15 * time.Second
	// MaxDispatchDeadline is the largest dispatch_deadline for HTTP tasks;
	// longer values are lowered to it.
	MaxDispatchDeadline = 30 * time.Minute
	// DefaultDispatchDeadline is used when a task has no dispatch_deadline.
	DefaultDispatchDeadline = 10 * time.Minute
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// Logger receives one record per dispatch attempt (attributes queue,
	// task, attempt, status, duration_ms, outcome) plus queue lifecycle
	// events. Nil means slog.Default().
	Logger *slog.Logger

	// HTTPClient performs task dispatches. Nil means a dedicated client that
	// does not follow redirects (a 3xx answer is a failed attempt, as in the
	// real service). Per-attempt timeouts come from the task's
	// dispatch_deadline, so the client needs no Timeout of its own.
	HTTPClient *http.Client

	// Clock returns the current time. Nil means time.Now. With a custom
	// clock the dispatchers re-check due tasks at least every 20ms of real
	// time, so advancing a fake clock takes effect promptly.
	Clock func() time.Time

	// TombstoneTTL is how long the name of a task that completed, exhausted
	// its retries, was deleted or purged stays reserved. Zero means
	// DefaultTombstoneTTL (1h); a negative value disables tombstones.
	TombstoneTTL time.Duration

	// QueueTombstoneTTL, when positive, makes CreateQueue answer
	// FailedPrecondition for a queue name deleted less than this long ago,
	// as the real service does (for up to several days). Zero (the default)
	// lets a deleted queue be re-created at once, which is friendlier for
	// tests.
	QueueTombstoneTTL time.Duration

	// MinDispatchDeadline is the lower clamp applied to a task's
	// dispatch_deadline. Zero means DefaultMinDispatchDeadline (15s, the
	// real service's minimum); tests may lower it to exercise timeouts
	// quickly.
	MinDispatchDeadline time.Duration

	// Chaos injects delivery faults (NOETL_DELIVERY_CHAOS): a random delay
	// before each attempt's request, and a share of attempts delivered twice
	// at the same moment (the duplicate's answer is ignored). Nil: none.
	Chaos *chaos.Injector

	// OIDC signs the ID token of tasks with an oidc_token (one per
	// attempt). Nil: no token is attached.
	OIDC *OIDCSigner
}

// Server implements cloudtaskspb.CloudTasksServer in memory and dispatches
// HTTP tasks. Create it with NewServer; it is safe for concurrent use. Its
// RPC methods may also be called directly, without gRPC.
type Server struct {
	// UnimplementedCloudTasksServer provides forward compatibility: RPCs
	// added to the service after this emulator was written answer
	// Unimplemented.
	cloudtaskspb.UnimplementedCloudTasksServer

	log          *slog.Logger
	client       *http.Client
	ownClient    bool
	clock        func() time.Time
	fakeClock    bool
	tombTTL      time.Duration
	queueTombTTL time.Duration
	minDeadline  time.Duration
	chaos        *chaos.Injector
	oidc         *OIDCSigner

	ctx    context.Context // cancelled by Stop; parent of dispatch requests
	cancel context.CancelFunc
	wg     sync.WaitGroup // dispatcher loops and in-flight attempts

	mu         sync.Mutex
	stopped    bool
	grpcServer *grpc.Server
	queues     map[string]*queue    // by full queue name
	tombstones map[string]time.Time // task full name -> removal time
	queueTombs map[string]time.Time // queue full name -> deletion time
	cmek       map[string]*cloudtaskspb.CmekConfig
	ops        map[string]storedOp // batch operations by parent + request id
	lastSweep  time.Time
	etagSeq    uint64
}

// NewServer returns a Server configured by opts. No goroutine is started
// until a queue is created.
func NewServer(opts Options) *Server {
	s := &Server{
		log:          opts.Logger,
		client:       opts.HTTPClient,
		clock:        opts.Clock,
		tombTTL:      opts.TombstoneTTL,
		queueTombTTL: opts.QueueTombstoneTTL,
		minDeadline:  opts.MinDispatchDeadline,
		chaos:        opts.Chaos,
		oidc:         opts.OIDC,
		queues:       map[string]*queue{},
		tombstones:   map[string]time.Time{},
		queueTombs:   map[string]time.Time{},
		cmek:         map[string]*cloudtaskspb.CmekConfig{},
		ops:          map[string]storedOp{},
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64 // many dispatches usually share one target
		s.client = &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
		s.ownClient = true
	}
	if s.clock == nil {
		s.clock = time.Now
	} else {
		s.fakeClock = true
	}
	if s.tombTTL == 0 {
		s.tombTTL = DefaultTombstoneTTL
	}
	if s.minDeadline <= 0 {
		s.minDeadline = DefaultMinDispatchDeadline
	}
	if s.minDeadline > MaxDispatchDeadline {
		s.minDeadline = MaxDispatchDeadline
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Register registers the CloudTasks service on g. Use it to share a
// grpc.Server with other services; Serve does it for you otherwise.
func (s *Server) Register(g *grpc.Server) {
	cloudtaskspb.RegisterCloudTasksServer(g, s)
}

// ErrStopped is returned by Serve when the Server has already been stopped
// or is already serving.
var ErrStopped = errs.Sentinel(errs.FailedPrecondition, "cloudtasks: server stopped or already serving")

// Serve creates a grpc.Server, registers the service and serves lis until
// Stop is called, in which case it returns nil. It returns ErrStopped if the
// Server was stopped before or Serve was already called, and any other
// error from grpc.Server.Serve.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.stopped || s.grpcServer != nil {
		s.mu.Unlock()
		return ErrStopped
	}
	g := grpc.NewServer()
	s.Register(g)
	s.grpcServer = g
	s.mu.Unlock()
	err := g.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop gracefully stops the gRPC server started by Serve (waiting for
// in-flight RPCs), then stops every dispatcher, cancels in-flight dispatch
// requests (their outcome is discarded; the tasks are left as they were) and
// waits for all goroutines the Server started. It is idempotent. RPCs made
// directly or through a grpc.Server passed to Register keep working on the
// in-memory state after Stop, but nothing is dispatched any more.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.stopped = true
	g := s.grpcServer
	s.mu.Unlock()

	if g != nil {
		g.GracefulStop()
	}
	s.cancel()
	s.wg.Wait()
	if s.ownClient {
		s.client.CloseIdleConnections()
	}
}

// now returns the current time of the configured clock.
func (s *Server) now() time.Time { return s.clock() }

// tombstoneLocked reserves a removed task's name.
func (s *Server) tombstoneLocked(name string, now time.Time) {
	if s.tombTTL > 0 {
		s.tombstones[name] = now
	}
}

// tombstonedLocked reports whether name was removed less than TombstoneTTL ago.
func (s *Server) tombstonedLocked(name string, now time.Time) bool {
	at, ok := s.tombstones[name]
	if !ok {
		return false
	}
	if now.Sub(at) >= s.tombTTL {
		delete(s.tombstones, name)
		return false
	}
	return true
}

// sweepLocked drops expired tombstones and batch operations, at most once a
// minute.
func (s *Server) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < time.Minute {
		return
	}
	s.lastSweep = now
	for name, at := range s.tombstones {
		if now.Sub(at) >= s.tombTTL {
			delete(s.tombstones, name)
		}
	}
	for name, at := range s.queueTombs {
		if s.queueTombTTL <= 0 || now.Sub(at) >= s.queueTombTTL {
			delete(s.queueTombs, name)
		}
	}
	for id, op := range s.ops {
		if now.Sub(op.at) >= DefaultTombstoneTTL {
			delete(s.ops, id)
		}
	}
}
