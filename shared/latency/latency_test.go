package latency

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/store/storetest"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// recorder is an Injector's Sleep that records each wait (and waits none).
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waits)
}

// TestDistFitsMedianAndP99: the log-normal fitted to a median and a p99
// gives those back (within sampling error) over many draws.
func TestDistFitsMedianAndP99(t *testing.T) {
	d := Dist{Median: 25 * time.Millisecond, P99: 120 * time.Millisecond}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 40000
	v := make([]time.Duration, n)
	for i := range v {
		v[i] = d.Draw(r)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	med, p99 := v[n/2], v[n*99/100]
	if med < 24*time.Millisecond || med > 26*time.Millisecond {
		t.Errorf("median of draws %v, want about %v", med, d.Median)
	}
	if p99 < 110*time.Millisecond || p99 > 130*time.Millisecond {
		t.Errorf("p99 of draws %v, want about %v", p99, d.P99)
	}
	if v[n-1] > 10*d.P99 {
		t.Errorf("largest draw %v above the cap %v", v[n-1], 10*d.P99)
	}
	if got := (Dist{Median: 5 * time.Millisecond}).Draw(r); got != 5*time.Millisecond {
		t.Errorf("a Dist without a tail drew %v, want its median", got)
	}
}

// TestInjectorDeterministicUnderSeed: the same seed gives the same
// latencies; another seed others.
func TestInjectorDeterministicUnderSeed(t *testing.T) {
	seq := func(seed uint64) []time.Duration {
		in := New(GCP, seed)
		var out []time.Duration
		for _, op := range []Op{FirestoreRead, FirestoreCommit, PubSubPush, TasksDispatch, TasksRPC, GCSRead, GCSWrite, CloudRunRequest} {
			out = append(out, in.Draw(op), in.Draw(op))
		}
		return out
	}
	a, b, c := seq(7), seq(7), seq(8)
	if !slices.Equal(a, b) {
		t.Errorf("seed 7 drew %v then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 drew the same %v", a)
	}
	for i, d := range a {
		if d <= 0 {
			t.Errorf("draw %d is %v: every op of the gcp profile has a latency", i, d)
		}
	}
}

// TestLookup: off and "" are no profile; gcp is GCP; an unknown name is
// an error naming the known ones.
func TestLookup(t *testing.T) {
	for _, n := range []string{"", "off", " OFF "} {
		if _, ok, err := Lookup(n); ok || err != nil {
			t.Errorf("Lookup(%q) = ok %v, err %v; want no profile", n, ok, err)
		}
	}
	p, ok, err := Lookup("GCP")
	if !ok || err != nil || p.Name != "gcp" || len(p.Ops) != 8 {
		t.Errorf("Lookup(GCP) = %+v, %v, %v", p.Name, ok, err)
	}
	if _, _, err := Lookup("aws"); err == nil {
		t.Error("Lookup(aws) succeeded")
	}
}

// TestGCPFiguresCiteSources: every figure of the gcp profile has a source,
// a kind and a tail at or above its median.
func TestGCPFiguresCiteSources(t *testing.T) {
	for op, f := range GCP.Ops {
		if f.Source == "" || (f.Kind != Published && f.Kind != Estimate) || f.Median <= 0 || f.P99 < f.Median {
			t.Errorf("%s: %+v", op, f)
		}
	}
}

// TestDecoratedStoreCommitTakesTheDrawnLatency is the profile's effect
// on a store: a decorated memory store's commit returns no earlier than
// the latency the injector drew for it (a twin injector of the same seed
// gives the draw), and the undecorated store's commit does not wait it.
func TestDecoratedStoreCommitTakesTheDrawnLatency(t *testing.T) {
	ctx := context.Background()
	const seed = 42
	twin := New(GCP, seed)
	want := twin.Draw(FirestoreCommit)
	s := Store(memstore.NewMemory(), New(GCP, seed))
	start := time.Now()
	if err := s.LaneDone(ctx, "e1", "loop", 0); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < want {
		t.Errorf("decorated LaneDone took %v, want ≥ the drawn %v", took, want)
	}
	n, err := s.LaneCount(ctx, "e1", "loop")
	if err != nil || n != 1 {
		t.Fatalf("LaneCount = %d, %v: the decorator must pass the call through", n, err)
	}

	// The profile off: the store is the memory store itself, whose
	// commit waits nothing like the profile's median.
	plain := memstore.NewMemory()
	start = time.Now()
	if err := plain.LaneDone(ctx, "e1", "loop", 0); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= GCP.Ops[FirestoreCommit].Median*10 {
		t.Logf("undecorated LaneDone took %v (a loaded machine)", took)
	}
}

// TestStoreWaitsByOperation: reads wait one read, writes one commit,
// transactions a read and a commit, an optimistic checkpoint one commit,
// LeaseAcquire and CompleteUnit what the driver does;
// a wait cut short by ctx does not reach the store.
func TestStoreWaitsByOperation(t *testing.T) {
	ctx := context.Background()
	in := New(Profile{Name: "t", Ops: map[Op]Figure{FirestoreRead: {Dist: Dist{Median: time.Millisecond}}, FirestoreCommit: {Dist: Dist{Median: 2 * time.Millisecond}}}}, 1)
	rec := &recorder{}
	in.Sleep = rec.sleep
	mem := memstore.NewMemory()
	s := Store(mem, in)
	check := func(name string, want ...time.Duration) {
		t.Helper()
		rec.mu.Lock()
		got := rec.waits
		rec.waits = nil
		rec.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("%s waited %v, want %v", name, got, want)
		}
	}
	const r, c = time.Millisecond, 2 * time.Millisecond
	_, _ = s.ExecutionGet(ctx, "nope")
	check("ExecutionGet", r)
	_ = s.LaneDone(ctx, "e", "l", 1)
	check("LaneDone", c)
	_, _ = s.LoopDoneCreate(ctx, "e", "l", "owner")
	check("LoopDoneCreate", r, c)
	apply := func(*store.Execution) (*engine.Output, error) { return nil, nil }
	_, _ = s.ExecutionCheckpoint(ctx, store.CheckpointParams{ExecutionID: "e", OutboxID: "o", Apply: apply})
	check("ExecutionCheckpoint", r, c)
	_, _ = s.ExecutionCheckpoint(ctx, store.CheckpointParams{ExecutionID: "e", OutboxID: "o", Apply: apply, Base: &store.Execution{UpdateTime: time.Now()}})
	check("optimistic ExecutionCheckpoint", c)

	_, _ = s.CompleteUnit(ctx, store.CompleteUnitParams{})
	check("CompleteUnit without a Base", r, c)
	// As the driver does them: a step unit run without a lease, on the
	// caller's Base, is one commit (with the continued unit's lease in
	// it); a leased one reads its lease first.
	base := &store.Execution{UpdateTime: time.Now()}
	next := &store.NextLease{Unit: func() string { return "u2" }, Holder: "h2", TTL: time.Minute, Now: time.Now()}
	_, _ = s.CompleteUnit(ctx, store.CompleteUnitParams{ExecutionID: "e", Unit: "u1", Checkpoint: &store.CheckpointParams{OutboxID: "o", Apply: apply, Base: base}, Next: next})
	check("CompleteUnit of an unleased step unit on its Base", c)
	_, _ = s.CompleteUnit(ctx, store.CompleteUnitParams{ExecutionID: "e", Unit: "u1", Holder: "h1", Checkpoint: &store.CheckpointParams{OutboxID: "o", Apply: apply, Base: base}})
	check("CompleteUnit of a leased step unit", r, c)
	// LeaseAcquire: one Create on a free unit; a held one read too.
	lp := store.LeaseAcquireParams{ExecutionID: "e", Unit: "u9", Holder: "a", TTL: time.Minute, Now: time.Now()}
	_ = s.LeaseAcquire(ctx, lp)
	check("LeaseAcquire of a free unit", c)
	lp.Holder = "b"
	_ = s.LeaseAcquire(ctx, lp)
	check("LeaseAcquire of a held unit", c, r)

	stop := errors.New("stopped")
	in.Sleep = func(context.Context, time.Duration) error { return stop }
	if err := s.LaneDone(ctx, "e", "l", 2); !errors.Is(err, stop) {
		t.Errorf("LaneDone after a cut wait = %v, want the wait's error", err)
	}
	if n, _ := mem.LaneCount(ctx, "e", "l"); n != 1 {
		t.Errorf("lanes done = %d, want 1: a cut wait must not reach the store", n)
	}
}

// TestDecoratedStoreKeepsTheContract: the store conformance suite passes
// on a decorated memory store (a profile of zero latencies).
func TestDecoratedStoreKeepsTheContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return Store(memstore.NewMemory(), New(Profile{Name: "zero"}, 1)) })
}

type fakeTasks struct{ created []types.Command }

func (f *fakeTasks) TaskCreate(_ context.Context, cmd types.Command, _ time.Time) (bool, error) {
	f.created = append(f.created, cmd)
	return true, nil
}
func (f *fakeTasks) TaskDelete(context.Context, types.Command, time.Time) error { return nil }
func (f *fakeTasks) TaskDeleteExecution(context.Context, string) (int, error)   { return 0, nil }

// TestTasksDueNowWaitDispatch: a task due now waits create → dispatch, a
// delayed one the RPC alone.
func TestTasksDueNowWaitDispatch(t *testing.T) {
	in := New(Profile{Name: "t", Ops: map[Op]Figure{TasksDispatch: {Dist: Dist{Median: 40 * time.Millisecond}}, TasksRPC: {Dist: Dist{Median: 20 * time.Millisecond}}}}, 1)
	rec := &recorder{}
	in.Sleep = rec.sleep
	f := &fakeTasks{}
	c := Tasks(f, in)
	now := time.Now()
	_, _ = c.TaskCreate(context.Background(), types.Command{ExecutionID: "e"}, now)
	_, _ = c.TaskCreate(context.Background(), types.Command{ExecutionID: "e", NotBefore: now.Add(time.Minute)}, now)
	_ = c.TaskDelete(context.Background(), types.Command{ExecutionID: "e"}, now)
	if want := []time.Duration{40 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}; !slices.Equal(rec.waits, want) {
		t.Errorf("waits %v, want %v", rec.waits, want)
	}
	if len(f.created) != 2 {
		t.Errorf("created %d tasks, want 2", len(f.created))
	}
}

// TestBackendWaitsAndKeepsItsBucket: reads wait GCSRead, writes (a
// streamed one at Close) GCSWrite, and a named bucket stays named.
func TestBackendWaitsAndKeepsItsBucket(t *testing.T) {
	ctx := context.Background()
	in := New(Profile{Name: "t", Ops: map[Op]Figure{GCSRead: {Dist: Dist{Median: 30 * time.Millisecond}}, GCSWrite: {Dist: Dist{Median: 50 * time.Millisecond}}}}, 1)
	rec := &recorder{}
	in.Sleep = rec.sleep
	b := Backend(results.NewMemoryBucket("bkt"), in)
	if bn, ok := b.(results.BucketNamer); !ok || bn.Bucket() != "bkt" {
		t.Fatalf("decorated backend lost its bucket name")
	}
	if _, ok := Backend(results.NewMemory(), in).(results.BucketNamer); ok {
		t.Error("a backend without a bucket name gained one")
	}
	if err := b.Put(ctx, "k", []byte("v"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	w := b.NewWriter(ctx, "k2", results.ObjectAttrs{})
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(); n != 2 {
		t.Errorf("%d waits before the streamed object's Close, want 2", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{50 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond}; !slices.Equal(rec.waits, want) {
		t.Errorf("waits %v, want %v", rec.waits, want)
	}
}

type okTool struct{ runs *int }

func (o okTool) Run(context.Context, tools.Request) types.Outcome {
	*o.runs++
	return types.Outcome{Status: types.StatusOK}
}

// TestToolsWaitTheCloudRunRequest: each run of a wrapped tool waits one
// Cloud Run request, then runs the tool.
func TestToolsWaitTheCloudRunRequest(t *testing.T) {
	in := New(Profile{Name: "t", Ops: map[Op]Figure{CloudRunRequest: {Dist: Dist{Median: 5 * time.Millisecond}}}}, 1)
	rec := &recorder{}
	in.Sleep = rec.sleep
	runs := 0
	reg := Tools(tools.Registry{"python": okTool{&runs}}, in)
	if out := reg["python"].Run(context.Background(), tools.Request{}); out.Status != types.StatusOK || runs != 1 {
		t.Fatalf("outcome %+v, runs %d", out, runs)
	}
	if want := []time.Duration{5 * time.Millisecond}; !slices.Equal(rec.waits, want) {
		t.Errorf("waits %v, want %v", rec.waits, want)
	}
}

// TestProfilesMatchTheSetting: NOETL_LATENCY_PROFILE's allowed values are
// off and the profiles Lookup knows.
func TestProfilesMatchTheSetting(t *testing.T) {
	k, ok := config.ByEnv("NOETL_LATENCY_PROFILE")
	if !ok {
		t.Fatal("NOETL_LATENCY_PROFILE is not in the configuration registry")
	}
	if want := append([]string{"off"}, Names()...); !slices.Equal(k.Enum, want) {
		t.Errorf("NOETL_LATENCY_PROFILE allows %v, the profiles are %v", k.Enum, want)
	}
}

type fakeBus struct{ batches, cmds int }

func (f *fakeBus) PublishBatch(context.Context, types.Batch) error { f.batches++; return nil }
func (f *fakeBus) PublishCommands(_ context.Context, cmds ...types.Command) error {
	f.cmds += len(cmds)
	return nil
}

// TestPublisherWaitsThePush: each publish waits one publish → push.
func TestPublisherWaitsThePush(t *testing.T) {
	in := New(Profile{Name: "t", Ops: map[Op]Figure{PubSubPush: {Dist: Dist{Median: 50 * time.Millisecond}}}}, 1)
	rec := &recorder{}
	in.Sleep = rec.sleep
	f := &fakeBus{}
	p := Publisher(f, in)
	_ = p.PublishBatch(context.Background(), types.Batch{})
	_ = p.PublishCommands(context.Background(), types.Command{}, types.Command{})
	if want := []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}; !slices.Equal(rec.waits, want) || f.batches != 1 || f.cmds != 2 {
		t.Errorf("waits %v, batches %d, commands %d", rec.waits, f.batches, f.cmds)
	}
}
