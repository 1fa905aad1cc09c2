// Package latency adds a cloud's per-operation latency to the local
// stack, so that its benchmarks say something about a deployment: the
// emulators answer in microseconds where Firestore, Pub/Sub, Cloud Tasks,
// Cloud Storage and Cloud Run take milliseconds to tens of milliseconds.
//
// A Profile gives each operation (Op) a log-normal distribution fitted to
// a median and a 99th percentile (gcp.go holds the GCP figures and their
// sources). An Injector draws from them (deterministically under a seed)
// and waits; the decorators of decorators.go wrap the contracts the
// control plane uses — store.Store, bus.Publisher, tasks.Creator,
// results.Backend and the runner kinds' tools — and wait before each
// operation. NOETL_LATENCY_PROFILE names the profile; unset, nothing is
// wrapped.
package latency

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op is one kind of cloud operation a profile delays.
type Op string

// The operations of a profile.
const (
	// FirestoreRead is a document read or a query.
	FirestoreRead Op = "firestore_read"
	// FirestoreCommit is a write or a transaction's commit.
	FirestoreCommit Op = "firestore_commit"
	// PubSubPush is publish → push delivery to the subscriber.
	PubSubPush Op = "pubsub_push"
	// TasksDispatch is Cloud Tasks create → dispatch of a task due now.
	TasksDispatch Op = "cloudtasks_dispatch"
	// TasksRPC is one Cloud Tasks call without a dispatch behind it (the
	// create of a delayed task, a delete).
	TasksRPC Op = "cloudtasks_rpc"
	// GCSRead is Cloud Storage's time to first byte of a read (and a
	// metadata read or a listing).
	GCSRead Op = "gcs_read"
	// GCSWrite is a Cloud Storage upload (or delete) until it returns.
	GCSWrite Op = "gcs_write"
	// CloudRunRequest is the overhead of one request to a warm Cloud Run
	// instance (the runner).
	CloudRunRequest Op = "cloudrun_request"
)

// Dist is a log-normal distribution of latencies fitted to its median and
// 99th percentile: ln(latency) is normal with mean ln(Median) and
// standard deviation ln(P99/Median)/z₀.₉₉ (z₀.₉₉ ≈ 2.326). P99 ≤ Median
// gives the constant Median.
type Dist struct {
	Median, P99 time.Duration
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// Sigma is the standard deviation of ln(latency).
func (d Dist) Sigma() float64 {
	if d.P99 <= d.Median || d.Median <= 0 {
		return 0
	}
	return math.Log(float64(d.P99)/float64(d.Median)) / z99
}

// Draw returns one latency: exp(ln(Median) + Sigma·z) for z the next
// standard normal of r, capped at 10×P99 (the log-normal's far tail is
// not a figure anyone measured). Zero Median: 0.
func (d Dist) Draw(r *rand.Rand) time.Duration {
	if d.Median <= 0 {
		return 0
	}
	v := time.Duration(float64(d.Median) * math.Exp(d.Sigma()*r.NormFloat64()))
	if limit := 10 * max(d.P99, d.Median); v > limit {
		v = limit
	}
	return v
}

// Kind says whether a figure is published or our estimate.
type Kind string

// Figure kinds.
const (
	// Published: the median is a figure the provider publishes.
	Published Kind = "published"
	// Estimate: no public figure gives the number; ours, bounded by the
	// published text Source names.
	Estimate Kind = "estimate"
)

// Figure is one operation's distribution and where it comes from.
type Figure struct {
	Dist
	Kind   Kind
	Source string
}

// Profile is a named set of per-operation figures. An Op absent from Ops
// is not delayed.
type Profile struct {
	Name string
	Ops  map[Op]Figure
}

// profiles are the profiles NOETL_LATENCY_PROFILE names.
var profiles = map[string]Profile{GCP.Name: GCP}

// Names lists the profiles Lookup knows, sorted.
func Names() []string {
	var out []string
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the profile named name (case-insensitive). "" and "off"
// return ok=false and no error (no profile); an unknown name is an error
// listing the known ones.
func Lookup(name string) (Profile, bool, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" || n == "off" {
		return Profile{}, false, nil
	}
	p, ok := profiles[n]
	if !ok {
		return Profile{}, false, fmt.Errorf("latency: unknown profile %q (known: off, %s)", name, strings.Join(Names(), ", "))
	}
	return p, true, nil
}

// Injector draws an operation's latency from its profile and waits it.
// Safe for concurrent use.
type Injector struct {
	// Profile is the figures drawn from.
	Profile Profile
	// Sleep waits d or until ctx ends (ctx's error then). Nil: a timer.
	// Tests replace it to record the draws.
	Sleep func(ctx context.Context, d time.Duration) error

	mu  sync.Mutex
	rng *rand.Rand
}

// New returns an Injector of p whose draws are a function of seed alone
// (the same seed, the same sequence of latencies).
func New(p Profile, seed uint64) *Injector {
	return &Injector{Profile: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Draw returns the next latency of op (0 for an op the profile lacks).
func (in *Injector) Draw(op Op) time.Duration {
	f, ok := in.Profile.Ops[op]
	if !ok {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return f.Draw(in.rng)
}

// Wait draws op's latency and waits it; ctx's error when ctx ends first.
func (in *Injector) Wait(ctx context.Context, op Op) error {
	d := in.Draw(op)
	if d <= 0 {
		return ctx.Err()
	}
	if in.Sleep != nil {
		return in.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
