package worker

import (
	"context"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// The worker's options that the deployment's settings give it
// (shared/wiring.TestDepsWireSettings shows each setting reaching its
// option): each changes what the worker does.

// TestLeaseTTLMovesTheWatchdog: LeaseTTL (NOETL_LEASE_TTL_S) is the
// lease of a side-effecting unit; the watchdog armed with the lease is
// due at its expiry plus WatchdogGrace — 45 s later with a 75 s lease
// than with the default 30 s.
func TestLeaseTTLMovesTheWatchdog(t *testing.T) {
	due := func(ttl time.Duration) time.Time {
		t.Helper()
		env, w := setup(t, &fakeTool{}, single, nil)
		w.LeaseTTL = ttl
		deliver(t, w, take(t, env))
		for _, c := range env.Tasks.Created() {
			if c.Kind == types.CmdLeaseCheck {
				return c.NotBefore
			}
		}
		t.Fatalf("lease %s: no watchdog armed", ttl)
		return time.Time{}
	}
	if d := due(75 * time.Second).Sub(due(0)); d != 45*time.Second {
		t.Errorf("a 75 s lease moved the watchdog by %s from the default 30 s, want 45 s", d)
	}
}

// TestHeartbeatInterval: HeartbeatInterval (NOETL_HEARTBEAT_INTERVAL_S)
// is how often a held lease is renewed; unset, or not shorter than the
// lease, it is a third of the lease.
func TestHeartbeatInterval(t *testing.T) {
	for _, c := range []struct{ ttl, every, want time.Duration }{
		{0, 0, 10 * time.Second},
		{45 * time.Second, 0, 15 * time.Second},
		{45 * time.Second, 9 * time.Second, 9 * time.Second},
		{45 * time.Second, 45 * time.Second, 15 * time.Second},
	} {
		w := &Worker{LeaseTTL: c.ttl, HeartbeatInterval: c.every}
		if got := w.heartbeat(); got != c.want {
			t.Errorf("lease %s, HeartbeatInterval %s: renews every %s, want %s", c.ttl, c.every, got, c.want)
		}
	}
}

// TestHandOffAfterSetting: without executor.spec.handoff_s, HandOffAfter
// (NOETL_DISPATCH_DEADLINE_S × 4/5) is a unit's budget: a unit whose
// first task outran it hands the rest to a continuation; with the
// default (8 minutes) the same unit runs all its tasks.
func TestHandOffAfterSetting(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: long, path: tests/long}
workflow:
  - step: start
    tool:
      - a: {kind: python, code: "a()"}
      - b: {kind: python, code: "b()"}
`
	for _, c := range []struct {
		after time.Duration
		b     int // calls of b in the first unit
	}{{time.Second, 0}, {0, 1}} {
		var env *controltest.Env
		py := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
			env.Clock.Advance(1500 * time.Millisecond)
			return ok(req, n)
		}}
		env2, w := setup(t, py, src, nil)
		env = env2
		w.HandOffAfter = c.after
		deliver(t, w, take(t, env))
		if py.calls("a") != 1 || py.calls("b") != c.b {
			t.Errorf("HandOffAfter %s: the first unit ran a %d, b %d times; want a once, b %d", c.after, py.calls("a"), py.calls("b"), c.b)
		}
		if n := len(eventsOf(env, "ex1", types.EvUnitHandedOff)); n != 1-c.b {
			t.Errorf("HandOffAfter %s: %d hand-offs, want %d", c.after, n, 1-c.b)
		}
	}
}

// TestLoopItemTimeoutSetting: LoopItemTimeout
// (NOETL_TIMEOUTS_LOOP_ITEM_MS) is an iteration's budget when its loop
// sets no item_timeout_s: it caps the timeout each task of the iteration
// gets; unset, the task has none.
func TestLoopItemTimeoutSetting(t *testing.T) {
	for _, c := range []struct {
		budget time.Duration
		want   float64
	}{{4 * time.Second, 4}, {0, 0}} {
		py := &fakeTool{}
		env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{"a"}})
		w.LoopItemTimeout = c.budget
		drain(t, env, w)
		reqs := py.requests()
		if len(reqs) != 1 || reqs[0].TimeoutS != c.want {
			var got []float64
			for _, r := range reqs {
				got = append(got, r.TimeoutS)
			}
			t.Errorf("LoopItemTimeout %s: task timeouts %v, want [%v]", c.budget, got, c.want)
		}
	}
}
