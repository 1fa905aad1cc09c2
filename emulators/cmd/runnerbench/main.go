// Command runnerbench measures the runner hop on the local stack (scripts/bench
// hop): it calls the stack's runner directly, as execute does (an ID token
// minted with NOETL_RUNNER_TOKEN_KEY_FILE for NOETL_RUNNER_URL), N times
// with a task of a kind, and prints one JSON line with the medians and 90th
// percentiles of the round trip, of the runner's own time (the response's
// run_ms) and of the hop (round trip minus runner time: HTTP, token check,
// JSON both ways).
//
// Usage: runnerbench [-n N] [-kind python|duckdb|shell] [-parallel P]
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

	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/runner"
	"github.com/noetl/gcpengine/shared/tools"
)

func main() {
	n := flag.Int("n", 100, "calls")
	kind := flag.String("kind", "python", "task kind: python, duckdb or shell")
	par := flag.Int("parallel", 1, "calls at once")
	flag.Parse()
	cfg := map[string]map[string]any{
		"python": {"code": "result = 1"},
		"duckdb": {"query": "SELECT 1 AS x"},
		"shell":  {"command": "true"},
	}[*kind]
	if cfg == nil {
		fmt.Fprintf(os.Stderr, "runnerbench: unknown kind %q\n", *kind)
		os.Exit(2)
	}
	for _, k := range []string{"NOETL_RUNNER_URL", "NOETL_RUNNER_TOKEN_KEY_FILE", "NOETL_RUNNER_INVOKER"} {
		if os.Getenv(k) == "" {
			fmt.Fprintf(os.Stderr, "runnerbench: %s is not set (source .stack/env)\n", k)
			os.Exit(2)
		}
	}
	sig, err := oidc.LoadSigner(os.Getenv("NOETL_RUNNER_TOKEN_KEY_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "runnerbench:", err)
		os.Exit(1)
	}
	url := os.Getenv("NOETL_RUNNER_URL")
	var mu sync.Mutex
	var rts, runs, hops []float64
	c := &runner.Client{URL: url, Tokens: &runner.KeyTokens{Signer: sig, Email: os.Getenv("NOETL_RUNNER_INVOKER"), Audience: url},
		Observe: func(_ string, rt, run time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			rts = append(rts, ms(rt))
			runs = append(runs, ms(run))
			hops = append(hops, ms(rt-run))
		}}
	// One warm-up call (the runner resolves its interpreter on first use).
	if o := c.Tool(*kind).Run(context.Background(), tools.Request{Config: cfg, TimeoutS: 60}); o.Error != nil {
		fmt.Fprintln(os.Stderr, "runnerbench:", o.Error.Message)
		os.Exit(1)
	}
	rts, runs, hops = nil, nil, nil
	jobs := make(chan struct{}, *n)
	for i := 0; i < *n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	t0 := time.Now()
	var wg sync.WaitGroup
	for p := 0; p < *par; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if o := c.Tool(*kind).Run(context.Background(), tools.Request{Config: cfg, TimeoutS: 60}); o.Error != nil {
					fmt.Fprintln(os.Stderr, "runnerbench:", o.Error.Message)
					os.Exit(1)
				}
			}
		}()
	}
	wg.Wait()
	out := map[string]any{"bench": "hop", "kind": *kind, "calls": *n, "parallel": *par, "wall_ms": ms(time.Since(t0)),
		"median_round_trip_ms": q(rts, 0.5), "median_runner_ms": q(runs, 0.5), "median_hop_ms": q(hops, 0.5),
		"p90_round_trip_ms": q(rts, 0.9), "p90_hop_ms": q(hops, 0.9)}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// q is the p-quantile of v (nearest rank), rounded to 0.01 ms.
func q(v []float64, p float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p * float64(len(s)-1))
	return float64(int(s[i]*100+0.5)) / 100
}
