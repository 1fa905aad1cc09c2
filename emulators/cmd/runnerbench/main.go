// Command runnerbench measures the runner hop on the local stack (scripts/bench
// hop): it calls the stack's runner directly, as execute does (an ID token
// minted with NOETL_RUNNER_TOKEN_KEY_FILE for NOETL_RUNNER_URL), N times
// with a task of a kind, and prints one JSON line with the medians and 90th
// percentiles of the round trip, of the runner's own time (the response's
// run_ms) and of the hop (round trip minus runner time: HTTP, token check,
// JSON both ways). With -grants every call carries the result grants
// execute would issue (shared/runnerclient Granter: for duckdb, a signed PUT of
// the task's result object, signed with NOETL_RESULTS_SIGNING_KEY_FILE),
// so that the round trip includes signing them.
//
// With -gap each call waits that long after the previous one (a chain's
// pace: the runner's warm workers, NOETL_DUCKDB_WARM_WORKERS, are
// replaced between calls); without it calls follow each other at once
// and a kind with warm workers measures how fast the runner replaces them.
//
// Usage: runnerbench [-n N] [-kind python|duckdb|shell] [-parallel P] [-grants] [-gap D]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	neturl "net/url"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/runnerclient"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

func main() {
	n := flag.Int("n", 100, "calls")
	kind := flag.String("kind", "python", "task kind: python, duckdb or shell")
	par := flag.Int("parallel", 1, "calls at once")
	withGrants := flag.Bool("grants", false, "issue execute's result grants with every call (duckdb: a signed PUT of the result object)")
	gap := flag.Duration("gap", 0, "pause between one call's end and the next call (per caller)")
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
	c := &runnerclient.Client{URL: url, Tokens: &runnerclient.KeyTokens{Signer: sig, Email: os.Getenv("NOETL_RUNNER_INVOKER"), Audience: url},
		Observe: func(_ string, rt, run time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			rts = append(rts, ms(rt))
			runs = append(runs, ms(run))
			hops = append(hops, ms(rt-run))
		}}
	ctx := context.Background()
	if *withGrants {
		var err error
		if ctx, err = granted(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench:", err)
			os.Exit(1)
		}
	}
	// One warm-up call (the runner resolves its interpreter on first use).
	if o := c.Tool(*kind).Run(ctx, tools.Request{Config: cfg, TimeoutS: 60}); o.Error != nil {
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
				if *gap > 0 {
					time.Sleep(*gap)
				}
				if o := c.Tool(*kind).Run(ctx, tools.Request{Config: cfg, TimeoutS: 60}); o.Error != nil {
					fmt.Fprintln(os.Stderr, "runnerbench:", o.Error.Message)
					os.Exit(1)
				}
			}
		}()
	}
	wg.Wait()
	out := map[string]any{"bench": "hop", "kind": *kind, "calls": *n, "parallel": *par, "grants": *withGrants, "gap_ms": ms(*gap), "wall_ms": ms(time.Since(t0)),
		"median_round_trip_ms": q(rts, 0.5), "median_runner_ms": q(runs, 0.5), "median_hop_ms": q(hops, 0.5),
		"p90_round_trip_ms": q(rts, 0.9), "p90_hop_ms": q(hops, 0.9)}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

// granted gives c the Granter execute builds on the stack and returns a
// context carrying what the worker puts in an attempt's: the reading
// execution and the sink of its result (one execution id for all calls).
func granted(ctx context.Context, c *runnerclient.Client) (context.Context, error) {
	for _, k := range []string{"NOETL_RESULTS_SIGNING_KEY_FILE", "NOETL_RESULTS_SIGNED_ENDPOINT", "NOETL_RESULTS_BUCKET", "STORAGE_EMULATOR_HOST"} {
		if os.Getenv(k) == "" {
			return ctx, fmt.Errorf("%s is not set (source .stack/env)", k)
		}
	}
	u, err := neturl.Parse(os.Getenv("NOETL_RESULTS_SIGNED_ENDPOINT"))
	if err != nil {
		return ctx, err
	}
	s, err := grant.NewKeySigner(os.Getenv("NOETL_RESULTS_SIGNING_KEY_FILE"), os.Getenv("NOETL_RUNNER_INVOKER"), u.Host, u.Scheme == "http")
	if err != nil {
		return ctx, err
	}
	cl, err := storage.NewClient(ctx)
	if err != nil {
		return ctx, err
	}
	st := &results.Store{Backend: gcsresults.NewGCS(cl, os.Getenv("NOETL_RESULTS_BUCKET"))}
	c.Results = &runnerclient.Granter{Store: st, Signer: s}
	id := strconv.FormatInt(time.Now().UnixNano()>>8, 10)
	ctx = results.WithReader(ctx, results.Reader{Execution: id})
	coords := types.ResultCoords{ExecutionID: id, Step: "bench", Frame: 1, Attempt: 1}
	return results.WithSinks(ctx, func() *results.Sink { return st.NewSink(ctx, coords, results.OffloadOptions{Limit: -1}) }), nil
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
