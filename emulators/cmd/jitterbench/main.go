// Command jitterbench runs 1,000 retries through the engine's default
// policy and prints the spread of their delays as one JSON line
// (scripts/bench jitter): 1,000 executions of a step whose http task has
// no policy and answers 503 on its first attempt, run by the real worker
// and control plane over the in-memory drivers (shared/control/
// controltest) with the deployment defaults (NOETL_RETRIES_PLUGIN_*: the
// first retry waits a full-jitter draw from [0, 200 ms)). Each retry's
// delay is read from its policy.task.evaluated event. The figures:
// retries, distinct delays, min/p10/p50/p90/max in ms, the mean as a share
// of the cap, a 10-bucket histogram over [0, cap), and whether a second
// run of the same executions decides the same delays (the jitter is a
// function of recorded inputs: replay gives the same decisions).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// flaky answers 503 on a task's first attempt and 200 after.
type flaky struct{}

func (flaky) Run(ctx context.Context, req tools.Request) types.Outcome {
	if req.Attempt == 1 {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindServerError, Message: "HTTP 503", Retryable: true, Status: 503},
			HTTP: &types.HTTPOutcome{Status: 503}}
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"ok": true}, HTTP: &types.HTTPOutcome{Status: 200}}
}

func run(n int) ([]float64, error) {
	ctx := context.Background()
	env := controltest.NewEnv()
	env.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	env.Control.Log = env.Log
	w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
		Tools: tools.Registry{"http": flaky{}, "noop": tools.Adapt(noop.New())}}
	const src = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: jitter, path: bench/jitter}
workflow:
  - step: start
    tool:
      - fetch: {kind: http, method: GET, url: "http://api.test/x"}
`
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("jitter-bench-%04d", i)
		if err := env.Launch(ctx, ids[i], "", src, nil); err != nil {
			return nil, err
		}
	}
	for {
		cmd, ok := env.Tasks.Take(func(c types.Command) bool { return c.Kind == types.CmdRunStep || c.Kind == "" })
		if !ok {
			break
		}
		env.Clock.Set(cmd.NotBefore)
		if err := w.Run(ctx, cmd, worker.Delivery{TaskName: cmd.TaskName()}); err != nil && !errors.Is(err, worker.ErrRetryLater) {
			return nil, fmt.Errorf("delivery: %w", err)
		}
	}
	var delays []float64
	for _, id := range ids {
		if st := env.State(ctx, id).State; st.Status != engine.ExecOK {
			return nil, fmt.Errorf("execution %s: %s", id, st.Status)
		}
		for _, e := range env.Bus.Log(id) {
			if e.EventType != types.EvPolicyTaskEvaluated {
				continue
			}
			if p, err := history.Decode[history.PolicyTaskEvaluated](e); err == nil && p.DelayS != nil {
				delays = append(delays, *p.DelayS*1000)
			}
		}
	}
	return delays, nil
}

func main() {
	n := flag.Int("n", 1000, "executions (each retries once)")
	flag.Parse()
	a, err := run(*n)
	if err == nil && len(a) != *n {
		err = fmt.Errorf("%d retries, want %d", len(a), *n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jitterbench:", err)
		os.Exit(1)
	}
	b, err := run(*n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jitterbench:", err)
		os.Exit(1)
	}
	replayed := len(a) == len(b)
	sa, sb := append([]float64(nil), a...), append([]float64(nil), b...)
	sort.Float64s(sa)
	sort.Float64s(sb)
	for i := range sa {
		replayed = replayed && sa[i] == sb[i]
	}
	capMS := float64(engine.DefaultTaskRetry.Base.Milliseconds())
	distinct := map[float64]bool{}
	var sum float64
	hist := make([]int, 10)
	for _, d := range sa {
		distinct[d] = true
		sum += d
		k := int(d / capMS * 10)
		if k > 9 {
			k = 9
		}
		hist[k]++
	}
	q := func(p float64) float64 { return round(sa[int(p*float64(len(sa)-1))]) }
	out := map[string]any{"bench": "jitter", "retries": len(sa), "cap_ms": capMS, "distinct_delays": len(distinct),
		"min_ms": q(0), "p10_ms": q(0.1), "p50_ms": q(0.5), "p90_ms": q(0.9), "max_ms": q(1),
		"mean_share_of_cap": round(sum / float64(len(sa)) / capMS), "histogram_tenths_of_cap": hist, "replay_same_delays": replayed}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func round(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }
