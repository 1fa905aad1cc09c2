package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/telemetry"
)

// Outcomes of Handle (Result.Outcome).
const (
	// OutcomeStarted: the message's execution was started (or already
	// existed: a redelivery).
	OutcomeStarted = "started"
	// OutcomeSpooled: the message was written to the spool (and may be
	// acked).
	OutcomeSpooled = "spooled"
	// OutcomeDeadLettered: the message can never start an execution; it
	// was filed in the DLQ (and may be acked).
	OutcomeDeadLettered = "dead_lettered"
)

// Errors of Handle. Both are transient: the delivery must not be acked.
var (
	// ErrUnknownSubscription: no registration has that name (NotFound).
	ErrUnknownSubscription = errs.New(errs.NotFound, "subscribe: no such subscription registration")
	// ErrCircuitOpen: the downstream's circuit is open and the spool mode
	// refuses the message (off, hybrid before escalation, on_full
	// stop_acking): Pub/Sub redelivers it later (Unavailable).
	ErrCircuitOpen = errs.New(errs.Unavailable, "subscribe: circuit open")
)

// Result is what Handle did with a message.
type Result struct {
	Outcome string `json:"outcome"`
	// ExecutionID is the started execution (OutcomeStarted).
	ExecutionID string `json:"execution_id,omitempty"`
	// Playbook is the playbook path started.
	Playbook string `json:"playbook,omitempty"`
	// Object is the spool object written (OutcomeSpooled).
	Object string `json:"object,omitempty"`
	// Reason says why a message was spooled or dead-lettered.
	Reason string `json:"reason,omitempty"`
}

// PlaybookLoader resolves dispatch.playbook (shared/catalog: the catalog,
// then files under the repository root).
type PlaybookLoader interface {
	Load(ctx context.Context, path string, version int) (*catalog.Entry, error)
}

// Registration is a registered subscription with its parsed resource.
type Registration struct {
	Record *store.Subscription
	Spec   *dsl.Subscription
}

// ParseRegistration parses a stored registration's resource; its error is
// permanent (InvalidArgument): the stored YAML does not load.
func ParseRegistration(rec *store.Subscription) (*Registration, error) {
	spec, err := dsl.LoadSubscription([]byte(rec.Source), rec.Name)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "subscribe: stored subscription "+rec.Name)
	}
	return &Registration{Record: rec, Spec: spec}, nil
}

// Service turns messages into executions (see the package doc). Its
// exported fields are set once before use; it is safe for concurrent use.
// Circuit breakers and what the instance knows of each spool are kept per
// process (like NoETL's Cloud Run runtime, which keeps circuit state in
// memory): every instance probes and trips on its own.
type Service struct {
	Store       store.Store
	Bus         bus.Publisher
	Playbooks   PlaybookLoader
	Credentials credentials.Store
	// Buckets opens spool buckets (nil: a spool write fails transiently).
	Buckets Buckets
	// Probe probes downstreams (nil: DefaultProber).
	Probe Prober
	// Puller pulls batches for batch dispatch (nil: batch registrations
	// are not pulled).
	Puller Puller
	// Egress is the network policy of a kafka source's connections (the
	// brokers are the author's: nil only in tests).
	Egress *egress.Policy
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
	// DrainBudget bounds one drain pass (default 20 s); the rest waits
	// for the next tick.
	DrainBudget time.Duration
	// PullBudget bounds the batch pulls of one tick (default 20 s).
	PullBudget time.Duration

	mu   sync.Mutex
	subs map[string]*subState
}

// subState is the instance's runtime state of one subscription.
type subState struct {
	mu        sync.Mutex
	reg       *Registration
	gen       int
	breakers  map[string]*Breaker
	downs     []dsl.Downstream
	lastProbe time.Time
	// pending: the spool may hold items (spooled here, or listed); checked:
	// the instance has listed the spool at least once.
	pending, checked bool
	// bytes is the spool's size as last listed plus what was written.
	bytes      int64
	bytesKnown bool
	seq        uint64
	draining   sync.Mutex
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Service) prober() Prober {
	if s.Probe != nil {
		return s.Probe
	}
	return DefaultProber(nil)
}

// state returns the instance state of reg, reset when the registration's
// generation changed.
func (s *Service) state(reg *Registration) *subState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[string]*subState{}
	}
	name := reg.Record.Name
	st := s.subs[name]
	if st == nil {
		st = &subState{}
		s.subs[name] = st
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.breakers == nil || st.gen != reg.Record.Generation || st.reg == nil || st.reg.Record.Source != reg.Record.Source {
		st.gen = reg.Record.Generation
		st.downs = reg.Spec.Spool.Circuit.Downstreams()
		st.breakers = map[string]*Breaker{}
		for _, d := range st.downs {
			st.breakers[d.Name] = NewBreaker(reg.Spec.Spool.Circuit, d)
		}
		st.lastProbe = time.Time{}
		st.bytesKnown = false
	}
	st.reg = reg
	return st
}

// Lookup returns the registration named name, read from the store (one
// document read per delivery: a deleted or replaced registration takes
// effect at once); when the store fails, the last one this instance read
// is returned, so the spool keeps working while Firestore is unreachable.
// An unknown name is ErrUnknownSubscription.
func (s *Service) Lookup(ctx context.Context, name string) (*Registration, error) {
	rec, err := s.Store.SubscriptionGet(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		s.forget(name)
		return nil, fmt.Errorf("%w: %s", ErrUnknownSubscription, name)
	}
	if err != nil {
		s.mu.Lock()
		st := s.subs[name]
		s.mu.Unlock()
		if st != nil {
			st.mu.Lock()
			cached := st.reg
			st.mu.Unlock()
			if cached != nil {
				s.log().WarnContext(ctx, "subscription registration read failed; using the last one read", "subscription", name, "error", err.Error())
				return cached, nil
			}
		}
		return nil, err
	}
	reg, err := ParseRegistration(rec)
	if err != nil {
		return nil, err
	}
	s.state(reg)
	return reg, nil
}

func (s *Service) forget(name string) {
	s.mu.Lock()
	delete(s.subs, name)
	s.mu.Unlock()
}

// Handle turns one message of reg into an execution (see the package
// doc). It returns a Result and nil when the delivery may be acked (the
// execution started, the message was spooled, or it was dead-lettered),
// an error when it must be redelivered (the control plane failed and the
// spool refuses or failed too; ErrCircuitOpen).
func (s *Service) Handle(ctx context.Context, reg *Registration, msg Message) (Result, error) {
	spec := reg.Spec
	st := s.state(reg)
	env := Normalize(msg)
	plan := Resolve(spec.Headers, env.Headers)
	if s.maybeProbe(ctx, reg, st) && spec.Spool.Mode != dsl.SpoolOff {
		s.drain(ctx, reg, st) // a probe closed a circuit: backlog first
	}
	now := s.now()
	st.mu.Lock()
	ds := st.route(plan.ExecutionPool)
	b := st.breakers[ds]
	dec := b.Decide(now)
	openFor := b.OpenFor(now)
	st.mu.Unlock()
	if dec == Hold {
		return s.hold(ctx, reg, st, msg, plan, ds, openFor)
	}
	if spec.Spool.Mode != dsl.SpoolOff && spec.Spool.Drain.OnRecovery == "ordered_then_live" && s.mayHaveSpool(ctx, reg, st) {
		// Backlog first: a live message overtakes nothing still spooled.
		// A half-open test (Probe) goes to the oldest item instead.
		rep, ran := s.drainProbing(ctx, reg, st, dec == Probe)
		if !ran || rep.Remaining > 0 || rep.Err != "" {
			if dec == Probe {
				st.mu.Lock()
				b.Release() // the test was not used (another drain runs)
				st.mu.Unlock()
			}
			return s.spool(ctx, reg, st, msg, plan, ds, "draining")
		}
	}
	res, err := s.start(ctx, reg, msg, env, plan)
	st.mu.Lock()
	closed := false
	switch {
	case err == nil:
		closed = b.Success()
	case !isPermanent(err):
		if b.Failure(s.now()) {
			s.log().WarnContext(ctx, "subscription circuit opened", "subscription", reg.Record.Name, "downstream", ds, "error", err.Error())
		}
	}
	st.mu.Unlock()
	if err == nil {
		if closed {
			s.log().InfoContext(ctx, "subscription circuit closed", "subscription", reg.Record.Name, "downstream", ds)
			if spec.Spool.Mode != dsl.SpoolOff {
				s.drain(ctx, reg, st)
			}
		}
		return res, nil
	}
	if isPermanent(err) {
		return s.deadLetter(ctx, reg, msg, err)
	}
	if spec.Spool.Mode == dsl.SpoolBufferAndAck || (spec.Spool.Mode == dsl.SpoolHybrid && openFor >= time.Duration(spec.Spool.HybridEscalateAfterMS)*time.Millisecond) {
		s.log().WarnContext(ctx, "subscription dispatch failed; spooling", "subscription", reg.Record.Name, "message_id", msg.ID, "error", err.Error())
		return s.spool(ctx, reg, st, msg, plan, ds, "dispatch_failed")
	}
	return Result{}, err
}

// route maps a message's resolved execution pool to its downstream: the
// downstream of that name, else "default", else the first declared
// (noetl-tools CircuitRegistry::route). Called with st.mu held.
func (st *subState) route(pool string) string {
	if _, ok := st.breakers[pool]; ok && pool != "" {
		return pool
	}
	if _, ok := st.breakers["default"]; ok {
		return "default"
	}
	return st.downs[0].Name
}

// hold handles a message whose circuit is open.
func (s *Service) hold(ctx context.Context, reg *Registration, st *subState, msg Message, plan Plan, ds string, openFor time.Duration) (Result, error) {
	sp := reg.Spec.Spool
	switch sp.Mode {
	case dsl.SpoolOff:
		return Result{}, fmt.Errorf("%w: downstream %s of %s (spool mode off: Pub/Sub redelivers)", ErrCircuitOpen, ds, reg.Record.Name)
	case dsl.SpoolHybrid:
		if openFor < time.Duration(sp.HybridEscalateAfterMS)*time.Millisecond {
			return Result{}, fmt.Errorf("%w: downstream %s of %s (hybrid: refusing until the outage lasts %d ms)", ErrCircuitOpen, ds, reg.Record.Name, sp.HybridEscalateAfterMS)
		}
	}
	return s.spool(ctx, reg, st, msg, plan, ds, "circuit_open")
}

// start loads the playbook and starts the message's execution.
func (s *Service) start(ctx context.Context, reg *Registration, msg Message, env Envelope, plan Plan) (Result, error) {
	spec := reg.Spec
	path := spec.Dispatch.Playbook
	if plan.Playbook != "" {
		path = plan.Playbook
	}
	entry, err := s.Playbooks.Load(ctx, path, 0)
	if err != nil {
		var ve *dsl.ValidationError
		if errors.Is(err, catalog.ErrNotFound) || errors.As(err, &ve) {
			return Result{}, errs.Wrap(errs.InvalidArgument, err, "subscribe: playbook "+path)
		}
		return Result{}, err
	}
	subPath := spec.Metadata.Path
	if subPath == "" {
		subPath = spec.Metadata.Name
	}
	wl := Workload(env, spec.Dispatch.PayloadFrom, plan, subPath, sourceOf(spec))
	id := ExecutionID(reg.Record.Name, DedupKey(spec, reg.Record.Topic, plan, msg.ID))
	if plan.Trace != nil {
		// W3C trace context from the message: a sampled caller makes the
		// execution sampled (telemetry.Execution), and the request event
		// records the caller's context (its "trace" payload).
		ctx = telemetry.Extract(ctx, plan.Trace)
	}
	_, err = launch.Start(ctx, s.Store, s.Bus, launch.Params{Playbook: entry.Playbook, Source: entry.Source, Workload: wl,
		ExecutionID: id, Credentials: s.Credentials, Trace: plan.Trace,
		Creator: "subscription:" + reg.Record.Name, CatalogPath: entry.Path})
	if err != nil {
		var ke *launch.KeychainError
		if errors.Is(err, credentials.ErrNotGranted) || errors.As(err, &ke) && (errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid)) {
			return Result{}, errs.Wrap(errs.InvalidArgument, err, "subscribe")
		}
		return Result{}, err
	}
	s.log().InfoContext(ctx, "subscription message started an execution", "subscription", reg.Record.Name, "message_id", msg.ID,
		"execution_id", id, "playbook", path, "directives", len(plan.Applied))
	return Result{Outcome: OutcomeStarted, ExecutionID: id, Playbook: path}, nil
}

func isPermanent(err error) bool { return errs.Permanent(err) }

// mayHaveSpool reports whether the spool may hold items: what this
// instance saw, after listing the spool once.
func (s *Service) mayHaveSpool(ctx context.Context, reg *Registration, st *subState) bool {
	st.mu.Lock()
	checked, pending := st.checked, st.pending
	st.mu.Unlock()
	if checked || s.Buckets == nil {
		return pending
	}
	objs, err := s.Buckets(reg.Spec.Spool.Bucket).List(ctx, SpoolPrefix(reg.Record.Name))
	if err != nil {
		return pending
	}
	st.mu.Lock()
	st.checked, st.pending = true, st.pending || len(objs) > 0
	st.bytes, st.bytesKnown = sumSizes(objs), true
	pending = st.pending
	st.mu.Unlock()
	return pending
}

func sumSizes(objs []Object) int64 {
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return n
}

// nextSeq returns a receive sequence: Unix nanoseconds, strictly
// increasing within the instance. Called with st.mu held.
func (st *subState) nextSeq(now time.Time) uint64 {
	n := uint64(now.UnixNano())
	if n <= st.seq {
		n = st.seq + 1
	}
	st.seq = n
	return n
}

// spool writes msg to the spool (buffer_and_ack), applying the retention
// ceiling first.
func (s *Service) spool(ctx context.Context, reg *Registration, st *subState, msg Message, plan Plan, ds, reason string) (Result, error) {
	spec := reg.Spec
	if s.Buckets == nil {
		return Result{}, errs.New(errs.Unavailable, "subscribe: no spool backend configured")
	}
	b := s.Buckets(spec.Spool.Bucket)
	name := reg.Record.Name
	now := s.now()
	st.mu.Lock()
	it := Item{Subscription: name, Source: sourceOf(spec), MessageID: msg.ID, IdempotencyKey: plan.IdempotencyKey,
		DedupKey: DedupKey(spec, reg.Record.Topic, plan, msg.ID), RecvSeq: st.nextSeq(now), Downstream: ds, SHA256: sha256Hex(msg.Data),
		SpooledAtMS: nowMS(now), Reason: reason, Message: msg}
	known, size := st.bytesKnown, st.bytes
	st.mu.Unlock()
	it.OrderingKey = orderingKey(spec, msg)
	data, err := encodeItem(it)
	if err != nil {
		return Result{}, err
	}
	if max := spec.Spool.Retention.MaxBytes; max > 0 {
		if !known {
			objs, err := b.List(ctx, SpoolPrefix(name))
			if err != nil {
				return Result{}, err
			}
			size = sumSizes(objs)
			st.mu.Lock()
			st.bytes, st.bytesKnown = size, true
			st.mu.Unlock()
		}
		if size+int64(len(data)) > max {
			switch spec.Spool.Retention.OnFull {
			case "alert_only":
				s.log().WarnContext(ctx, "subscription spool over its retention ceiling", "subscription", name, "spool_bytes", size, "max_bytes", max)
			case "drop_to_dlq":
				if err := s.evict(ctx, reg, st, b, size+int64(len(data))-max); err != nil {
					return Result{}, err
				}
			default:
				return Result{}, fmt.Errorf("%w: spool of %s is full (%d of %d bytes; on_full stop_acking)", ErrCircuitOpen, name, size, max)
			}
		}
	}
	obj := SpoolPrefix(name) + it.ObjectKey() + ".json"
	if err := b.Put(ctx, obj, data); err != nil {
		return Result{}, errs.Wrap(errs.Unavailable, err, "subscribe: spool")
	}
	st.mu.Lock()
	st.pending = true
	st.bytes += int64(len(data))
	st.mu.Unlock()
	s.log().InfoContext(ctx, "subscription message spooled", "subscription", name, "message_id", msg.ID, "spool_ref", it.SpoolRef(),
		"sha256", it.SHA256, "object", "gs://"+spec.Spool.Bucket+"/"+obj, "downstream", ds, "reason", reason)
	return Result{Outcome: OutcomeSpooled, Object: obj, Reason: reason}, nil
}

func orderingKey(spec *dsl.Subscription, msg Message) string {
	if k := spec.Spool.OrderingKey; k != "" {
		for name, v := range msg.Attributes {
			if strings.EqualFold(name, k) {
				return v
			}
		}
		return ""
	}
	return msg.OrderingKey
}

// evict moves the oldest spool items to the dead-letter prefix until need
// bytes are freed (retention.on_full drop_to_dlq).
func (s *Service) evict(ctx context.Context, reg *Registration, st *subState, b Bucket, need int64) error {
	objs, err := b.List(ctx, SpoolPrefix(reg.Record.Name))
	if err != nil {
		return err
	}
	var freed int64
	for _, o := range objs {
		if freed >= need {
			break
		}
		data, err := b.Get(ctx, o.Name)
		if errors.Is(err, ErrNoObject) {
			continue
		}
		if err != nil {
			return err
		}
		if err := s.moveToDLQ(ctx, reg, b, o.Name, data, "on_full_evicted"); err != nil {
			return err
		}
		freed += o.Size
	}
	st.mu.Lock()
	st.bytes -= freed
	st.mu.Unlock()
	return nil
}

// moveToDLQ writes a spool object under the dead-letter prefix, files a
// DLQ entry (republished on the subscription's topic by a replay) and
// deletes the spool object.
func (s *Service) moveToDLQ(ctx context.Context, reg *Registration, b Bucket, obj string, data []byte, reason string) error {
	name := reg.Record.Name
	dst := DLQPrefix(name) + strings.TrimPrefix(obj, SpoolPrefix(name))
	if err := b.Put(ctx, dst, data); err != nil {
		return err
	}
	if it, err := decodeItem(data); err == nil {
		if err := s.fileDLQ(ctx, reg, it.Message, it.Attempts, reason); err != nil {
			return err
		}
	}
	s.log().ErrorContext(ctx, "subscription spool item dead-lettered", "subscription", name, "object", obj, "dlq_object", dst, "reason", reason)
	return b.Delete(ctx, obj)
}

// fileDLQ records a message that cannot start an execution in the DLQ
// (NoETL observability spec §8.6): source subscribe, kind message, topic the
// subscription's topic (a replay publishes it there again).
func (s *Service) fileDLQ(ctx context.Context, reg *Registration, msg Message, attempts int, reason string) error {
	now := s.now().UTC()
	payload := string(msg.Data)
	if len(payload) > 2048 {
		payload = payload[:2048]
	}
	e := store.DLQEntry{MessageID: "subscribe-" + reg.Record.Name + "-" + msg.ID, Attempts: max(attempts, 1), LastError: reason,
		FirstSeen: now, LastSeen: now, Payload: payload, ContextExcerpt: "subscription " + reg.Record.Name + ": " + reason,
		Source: "subscribe", Kind: "message", Topic: reg.Record.Topic, Attributes: msg.Attributes}
	e.SetUnit(msg.Data)
	return s.Store.DLQPut(ctx, e)
}

// deadLetter files msg in the DLQ for a permanent error; the delivery may
// then be acked.
func (s *Service) deadLetter(ctx context.Context, reg *Registration, msg Message, cause error) (Result, error) {
	reason := cause.Error()
	if err := s.fileDLQ(ctx, reg, msg, msg.DeliveryAttempt, reason); err != nil {
		return Result{}, err
	}
	s.log().ErrorContext(ctx, "subscription message dead-lettered", "subscription", reg.Record.Name, "message_id", msg.ID, "error", reason)
	return Result{Outcome: OutcomeDeadLettered, Reason: reason}, nil
}

// maybeProbe runs the active probes of reg's downstreams when
// probe_interval_ms has elapsed since the last ones, feeding the breakers.
// It reports whether a probe closed a circuit (the caller drains).
func (s *Service) maybeProbe(ctx context.Context, reg *Registration, st *subState) bool {
	interval := time.Duration(reg.Spec.Spool.Circuit.ProbeIntervalMS) * time.Millisecond
	now := s.now()
	st.mu.Lock()
	if !st.lastProbe.IsZero() && now.Sub(st.lastProbe) < interval {
		st.mu.Unlock()
		return false
	}
	st.lastProbe = now
	downs := st.downs
	st.mu.Unlock()
	recovered := false
	for _, d := range downs {
		up, ok := s.prober()(ctx, d)
		if !ok {
			continue
		}
		st.mu.Lock()
		b := st.breakers[d.Name]
		if up {
			if b.Success() {
				recovered = true
				s.log().InfoContext(ctx, "subscription circuit closed (probe)", "subscription", reg.Record.Name, "downstream", d.Name, "target", d.Target)
			}
		} else if b.Failure(s.now()) {
			s.log().WarnContext(ctx, "subscription circuit opened (probe)", "subscription", reg.Record.Name, "downstream", d.Name, "target", d.Target)
		}
		st.mu.Unlock()
	}
	return recovered
}

// DrainReport is one drain pass.
type DrainReport struct {
	// Replayed items started their execution and left the spool.
	Replayed int `json:"replayed"`
	// DeadLettered items moved to the dlq prefix.
	DeadLettered int `json:"dead_lettered"`
	// Remaining items are still spooled (their circuit is open, their
	// lane stalled, a replay failed, or the budget ran out).
	Remaining int `json:"remaining"`
	// Err is a listing or reading failure that stopped the pass.
	Err string `json:"error,omitempty"`
}

// Drain replays reg's spool once (drain below); it reports false when
// another drain of reg runs in this instance.
func (s *Service) Drain(ctx context.Context, reg *Registration) (DrainReport, bool) {
	return s.drain(ctx, reg, s.state(reg))
}

// drain replays the spool in object-name (receive) order (noetl-tools
// SpoolEngine::drain): items whose downstream circuit is open wait; with
// ordering global or per_key a waiting or failing item stalls its lane
// (global: one lane; per_key: its ordering key); an item older than
// retention.max_age_hours, a permanent failure or the
// drain.max_replay_attempts-th failure is dead-lettered; replays are
// spaced by drain.rate_per_sec. Replays are idempotent (the execution id
// is derived from the message), so a crash or a concurrent drain in
// another instance starts nothing twice.
func (s *Service) drain(ctx context.Context, reg *Registration, st *subState) (DrainReport, bool) {
	return s.drainProbing(ctx, reg, st, false)
}

// drainProbing is drain; with probing, the first item held by a half-open
// breaker is replayed as that breaker's test (the caller was handed the
// Probe decision).
func (s *Service) drainProbing(ctx context.Context, reg *Registration, st *subState, probing bool) (DrainReport, bool) {
	var rep DrainReport
	if !st.draining.TryLock() {
		return rep, false
	}
	defer st.draining.Unlock()
	spec := reg.Spec
	if s.Buckets == nil {
		rep.Err = "no spool backend configured"
		return rep, true
	}
	name := reg.Record.Name
	b := s.Buckets(spec.Spool.Bucket)
	objs, err := b.List(ctx, SpoolPrefix(name))
	if err != nil {
		rep.Err = err.Error()
		return rep, true
	}
	budget := s.DrainBudget
	if budget <= 0 {
		budget = 20 * time.Second
	}
	deadline := s.now().Add(budget)
	ordered := spec.Spool.Ordering != "none"
	stalled := map[string]bool{}
	var size int64
	var gap time.Duration
	if r := spec.Spool.Drain.RatePerSec; r > 0 {
		gap = time.Second / time.Duration(r)
	}
	for _, o := range objs {
		if ctx.Err() != nil || s.now().After(deadline) {
			rep.Remaining++
			size += o.Size
			continue
		}
		data, err := b.Get(ctx, o.Name)
		if errors.Is(err, ErrNoObject) {
			continue // replayed by a concurrent drain
		}
		if err != nil {
			rep.Err = err.Error()
			rep.Remaining++
			size += o.Size
			continue
		}
		it, err := decodeItem(data)
		if err != nil {
			if err := s.moveToDLQ(ctx, reg, b, o.Name, data, "undecodable spool item: "+err.Error()); err == nil {
				rep.DeadLettered++
			}
			continue
		}
		lane := ""
		if spec.Spool.Ordering == "per_key" {
			lane = it.OrderingKey
		}
		if ordered && stalled[lane] {
			rep.Remaining++
			size += o.Size
			continue
		}
		if age := spec.Spool.Retention.MaxAgeHours; age > 0 && s.now().Sub(time.UnixMilli(it.SpooledAtMS)) >= time.Duration(age)*time.Hour {
			if err := s.moveToDLQ(ctx, reg, b, o.Name, data, "retention_expired"); err == nil {
				rep.DeadLettered++
			}
			continue
		}
		st.mu.Lock()
		br := st.breakers[it.Downstream]
		if br == nil {
			br = st.breakers[st.route("")]
		}
		dec := br.Decide(s.now())
		if dec == Hold && probing && br.Phase() == HalfOpen {
			dec, probing = Probe, false
		}
		st.mu.Unlock()
		if dec == Hold {
			rep.Remaining++
			size += o.Size
			stalled[lane] = true
			continue
		}
		env := Normalize(it.Message)
		plan := Resolve(spec.Headers, env.Headers)
		_, err = s.start(ctx, reg, it.Message, env, plan)
		st.mu.Lock()
		if err == nil {
			br.Success()
		} else if !isPermanent(err) {
			br.Failure(s.now())
		}
		st.mu.Unlock()
		switch {
		case err == nil:
			if derr := b.Delete(ctx, o.Name); derr != nil {
				rep.Err = derr.Error()
			}
			rep.Replayed++
			s.log().InfoContext(ctx, "subscription spool item replayed", "subscription", name, "message_id", it.MessageID, "spool_ref", it.SpoolRef())
			if gap > 0 {
				time.Sleep(gap)
			}
		case isPermanent(err):
			if err := s.moveToDLQ(ctx, reg, b, o.Name, data, err.Error()); err == nil {
				rep.DeadLettered++
			}
		default:
			it.Attempts++
			if it.Attempts >= max(spec.Spool.Drain.MaxReplayAttempts, 1) {
				d, _ := encodeItem(it)
				if err := s.moveToDLQ(ctx, reg, b, o.Name, d, "max_replay_attempts: "+err.Error()); err == nil {
					rep.DeadLettered++
				}
				continue
			}
			if d, err := encodeItem(it); err == nil {
				_ = b.Put(ctx, o.Name, d)
			}
			rep.Remaining++
			size += o.Size
			if ordered {
				stalled[lane] = true
			}
		}
	}
	st.mu.Lock()
	st.checked, st.pending = true, rep.Remaining > 0
	st.bytes, st.bytesKnown = size, rep.Err == ""
	st.mu.Unlock()
	if rep.Replayed > 0 || rep.DeadLettered > 0 {
		s.log().InfoContext(ctx, "subscription spool drained", "subscription", name, "replayed", rep.Replayed, "dead_lettered", rep.DeadLettered, "remaining", rep.Remaining)
	}
	return rep, true
}

// SubscriptionReport is one subscription's part of a tick.
type SubscriptionReport struct {
	// Circuit is each downstream's phase.
	Circuit map[string]Phase `json:"circuit"`
	// Drain is the tick's drain pass (nil when none ran).
	Drain *DrainReport `json:"drain,omitempty"`
	// Pulled counts the messages pulled for batch dispatch.
	Pulled int `json:"pulled,omitempty"`
	// Err is what went wrong.
	Err string `json:"error,omitempty"`
}

// TickReport is Tick's answer: one report per registration.
type TickReport struct {
	Subscriptions map[string]SubscriptionReport `json:"subscriptions"`
}

// Tick runs the periodic work of every registration: the active probes
// (at most every probe_interval_ms), a drain of a spool that holds items
// while its circuits allow, and the batch pulls of batch-dispatch
// registrations. Cloud Scheduler calls it in GCP, the stack's ticker
// locally; it is safe to call concurrently and often.
func (s *Service) Tick(ctx context.Context) (TickReport, error) {
	recs, err := s.Store.SubscriptionList(ctx)
	if err != nil {
		return TickReport{}, err
	}
	rep := TickReport{Subscriptions: map[string]SubscriptionReport{}}
	live := map[string]bool{}
	for i := range recs {
		rec := &recs[i]
		live[rec.Name] = true
		reg, err := ParseRegistration(rec)
		if err != nil {
			rep.Subscriptions[rec.Name] = SubscriptionReport{Err: err.Error()}
			continue
		}
		st := s.state(reg)
		s.maybeProbe(ctx, reg, st)
		r := SubscriptionReport{}
		if reg.Spec.Spool.Mode != dsl.SpoolOff && s.Buckets != nil {
			objs, err := s.Buckets(reg.Spec.Spool.Bucket).List(ctx, SpoolPrefix(rec.Name))
			if err != nil {
				r.Err = err.Error()
			} else if len(objs) > 0 {
				d, ran := s.drain(ctx, reg, st)
				if ran {
					r.Drain = &d
				}
			} else {
				st.mu.Lock()
				st.checked, st.pending, st.bytes, st.bytesKnown = true, false, 0, true
				st.mu.Unlock()
			}
		}
		if rec.Delivery == store.DeliveryPull && (s.Puller != nil || reg.Spec.Source == SourceKafka) {
			n, err := s.pull(ctx, reg)
			r.Pulled = n
			if err != nil && r.Err == "" {
				r.Err = err.Error()
			}
		}
		r.Circuit = st.phases()
		rep.Subscriptions[rec.Name] = r
	}
	s.mu.Lock()
	for name := range s.subs {
		if !live[name] {
			delete(s.subs, name)
		}
	}
	s.mu.Unlock()
	return rep, nil
}

func (st *subState) phases() map[string]Phase {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]Phase{}
	names := make([]string, 0, len(st.breakers))
	for n := range st.breakers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out[n] = st.breakers[n].Phase()
	}
	return out
}
