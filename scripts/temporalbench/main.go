// Command temporalbench measures Temporal on the chain scripts/bench
// measures the engine on: a workflow of N sequential no-op activities
// (default 20), run against a Temporal frontend (the CLI's
// `temporal server start-dev`), with the worker in this process. It
// prints ONE JSON line: the median and p90 milliseconds per step (one
// activity's start → the next one's start, read from the activities' own
// clocks, as scripts/bench reads step.done → step.done), the median wall
// time of a run, over R runs after a warm-up run.
//
// It is its own Go module (scripts/temporalbench/go.mod) so that the
// engine's module does not depend on Temporal's SDK; scripts/bench
// temporal builds and runs it, which needs the Go module proxy.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const taskQueue = "noetl-bench-chain"

// starts records each workflow's activity start times (this process runs
// the activities).
var (
	mu     sync.Mutex
	starts = map[string][]time.Time{}
)

// Noop is the chain's activity: it records when it ran and does nothing.
func Noop(ctx context.Context) error {
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	mu.Lock()
	starts[id] = append(starts[id], time.Now())
	mu.Unlock()
	return nil
}

// Chain runs n Noop activities one after another.
func Chain(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, Noop).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	addr := flag.String("address", "127.0.0.1:7233", "Temporal frontend host:port")
	n := flag.Int("n", 20, "activities per chain")
	runs := flag.Int("runs", 5, "measured runs (after one warm-up run)")
	flag.Parse()
	if err := run(*addr, *n, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "temporalbench:", err)
		os.Exit(1)
	}
}

func run(addr string, n, runs int) error {
	var c client.Client
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, err = client.Dial(client.Options{HostPort: addr, Logger: quiet{}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dial %s: %w", addr, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(Chain)
	w.RegisterActivity(Noop)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	var gaps, walls []float64
	for i := 0; i <= runs; i++ {
		id := fmt.Sprintf("bench-chain-%d-%d", time.Now().UnixNano(), i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, Chain, n)
		if err == nil {
			err = wr.Get(ctx, nil)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		mu.Lock()
		s := starts[id]
		mu.Unlock()
		if len(s) != n {
			return fmt.Errorf("run %d: %d activities ran, want %d", i, len(s), n)
		}
		var g []float64
		for j := 1; j < len(s); j++ {
			g = append(g, float64(s[j].Sub(s[j-1]).Microseconds())/1000)
		}
		label := "warm-up"
		if i > 0 {
			label = fmt.Sprintf("run %d/%d", i, runs)
			gaps = append(gaps, g...)
			walls = append(walls, float64(s[len(s)-1].Sub(s[0]).Microseconds())/1000)
		}
		fmt.Fprintf(os.Stderr, "temporalbench: %s: %s median %.1f ms/step\n", label, id, quantile(g, 0.5))
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"bench": "temporal_chain", "steps": n, "runs": runs,
		"median_ms_per_step": round1(quantile(gaps, 0.5)), "p90_ms_per_step": round1(quantile(gaps, 0.9)),
		"median_wall_ms": round1(quantile(walls, 0.5)),
	})
}

// quantile is the q-quantile of v (linear between order statistics).
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// quiet drops the SDK's log lines (progress goes to stderr ourselves).
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
