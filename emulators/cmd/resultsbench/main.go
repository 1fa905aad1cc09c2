// Command resultsbench measures the result tier (scripts/bench results)
// and prints one JSON line:
//
//   - write_ratio_vs_ipc, read_ratio_vs_ipc: a table of -rows rows × 5
//     columns written as Feather through the tier (results.Sink: re-cut
//     into the tier's record batches, sha256, the backend's streaming
//     writer) and read back through it (results.Store.OpenTable: ranged
//     reads, batch by batch, digest check), as throughput relative to
//     arrow-go's own IPC file writer and reader on the same batches in
//     memory, in the same run (medians of -runs interleaved rounds).
//     The tier's bucket is the stack's GCS emulator with -backend gcs
//     (STORAGE_EMULATOR_HOST, NOETL_RESULTS_BUCKET), else in memory.
//   - peak_rss_mib_over_idle: a playbook whose first step produces a
//     table of about -table-mib MiB (duckdb range(), streamed into the
//     tier), whose next two steps ignore it and whose last step streams
//     it into PostgreSQL (-pg-dsn) with transfer (source type result),
//     run through the engine's worker in this process (the execution's
//     state and queue in memory); the process's peak RSS (VmHWM, reset
//     before each step) above its RSS before the playbook started. The
//     object's reads between the producer and the consumer are counted
//     (reads_between_producer_and_consumer, want 0). -table-mib 0 skips
//     this part.
//
// Usage: resultsbench [-rows N] [-runs R] [-backend memory|gcs] [-table-mib M] [-pg-dsn DSN]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/emulators/resultsflow"
	"github.com/noetl/gcpengine/shared/results"
)

func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

func main() {
	rows := flag.Int("rows", 1_000_000, "rows of the ratio table")
	runs := flag.Int("runs", 3, "interleaved rounds of the ratio figures (medians)")
	per := flag.Int("producer-batch", 8192, "rows per batch the producer hands the tier (the duckdb kind's)")
	backend := flag.String("backend", "memory", "the tier's bucket: memory, or gcs (the stack's emulator: STORAGE_EMULATOR_HOST, NOETL_RESULTS_BUCKET)")
	tableMiB := flag.Int("table-mib", 1024, "size of the flow's table in MiB (0: skip the flow)")
	dsn := flag.String("pg-dsn", os.Getenv("NOETL_PG_DSN"), "PostgreSQL DSN of the flow's target (default $NOETL_PG_DSN)")
	table := flag.String("pg-table", "bench_results", "the flow's target table (replaced)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: resultsbench [-rows N] [-runs R] [-backend memory|gcs] [-table-mib M] [-pg-dsn DSN]")
		flag.PrintDefaults()
	}
	cpuprof := flag.String("cpuprofile", "", "write a CPU profile of the ratio figures to this file")
	flag.Parse()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "resultsbench: "+f+"\n", a...) }
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "resultsbench:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	var be results.Backend
	where := "in-memory bucket (results.NewMemory)"
	switch *backend {
	case "memory":
		be = results.NewMemory()
	case "gcs":
		host := os.Getenv("STORAGE_EMULATOR_HOST")
		bucket := os.Getenv("NOETL_RESULTS_BUCKET")
		if host == "" || bucket == "" {
			fail(fmt.Errorf("-backend gcs needs STORAGE_EMULATOR_HOST and NOETL_RESULTS_BUCKET (source .stack/env)"))
		}
		cl, err := storage.NewClient(ctx)
		if err != nil {
			fail(err)
		}
		defer cl.Close()
		be = results.NewGCS(cl, bucket)
		where = "GCS emulator (fake-gcs-server) at " + host + ", bucket " + bucket
	default:
		fail(fmt.Errorf("unknown -backend %q (memory or gcs)", *backend))
	}
	out := map[string]any{"bench": "results", "backend": where, "gomaxprocs": runtime.GOMAXPROCS(0), "cpus": runtime.NumCPU()}
	rs := &results.Store{Backend: be}
	logf("ratio: %d rows × 5 columns, %d rounds, tier on %s", *rows, *runs, where)
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
	}
	r, err := measureRatios(ctx, rs, *rows, *per, *runs)
	if *cpuprof != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fail(err)
	}
	for k, v := range r {
		out[k] = v
	}
	if *tableMiB > 0 {
		if *dsn == "" {
			fail(fmt.Errorf("the flow needs -pg-dsn (or NOETL_PG_DSN)"))
		}
		runtime.GC()
		n := int64(*tableMiB) << 20 / resultsflow.RowBytes
		cb := &resultsflow.CountingBackend{Backend: be}
		frs := &results.Store{Backend: cb, Cache: results.NewCache(64 << 20)}
		logf("flow: a table of %d rows (~%d MiB) produced, ignored twice, streamed into PostgreSQL", n, *tableMiB)
		t0 := time.Now()
		f, err := resultsflow.Run(ctx, cb, frs, n, *dsn, *table, logf)
		if f != nil {
			out["flow"] = f
			out["peak_rss_mib_over_idle"] = round(f.PeakMiB-f.IdleMiB, 1)
			out["flow_table_mib"] = round(float64(f.TableBytes)/(1<<20), 1)
		}
		if err != nil {
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			fail(fmt.Errorf("flow after %s: %w", time.Since(t0).Round(time.Second), err))
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(b))
}
