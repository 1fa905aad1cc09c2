// Command resultsbench measures the result tier (scripts/bench results)
// and prints one JSON line:
//
//   - write_ratio_vs_ipc, read_ratio_vs_ipc: a table of -rows rows × 5
//     columns written as Feather through the tier (results.Sink: re-cut
//     into the tier's record batches, sha256 and crc32c, the backend's
//     streaming writer) and read back through it (results.Store.OpenTable:
//     the recorded generation, batch by batch, the default crc32c check), as throughput relative to
//     arrow-go's own IPC file writer and reader on the same batches in
//     memory, in the same run (medians of -runs interleaved rounds).
//     The tier's bucket is in memory (results.NewMemory: the figures of
//     the tier's own code); with -backends memory,gcs the same figures
//     against the stack's GCS emulator (STORAGE_EMULATOR_HOST,
//     NOETL_RESULTS_BUCKET) follow as gcs_write_ratio_vs_ipc and
//     gcs_read_ratio_vs_ipc (HTTP to fake-gcs-server included).
//     read_ratio_vs_ipc_sha256 is the read checking the reference's
//     sha256 instead (NOETL_RESULT_READ_CHECK=sha256).
//   - peak_rss_mib_over_idle: a playbook whose first step produces a
//     table of about -table-mib MiB (duckdb range(), streamed into the
//     tier), whose next two steps ignore it and whose last step streams
//     it into PostgreSQL (-pg-dsn) with transfer (source type result),
//     run through the engine's worker in this process (the execution's
//     state and queue in memory; the table in the GCS emulator when gcs
//     is among -backends, else in memory); the process's peak RSS
//     (VmHWM, reset before each step) above its RSS before the playbook
//     started (after the ratio figures' memory was returned to the OS). The
//     object's reads between the producer and the consumer are counted
//     (reads_between_producer_and_consumer, want 0). -table-mib 0 skips
//     this part.
//
// Usage: resultsbench [-rows N] [-runs R] [-backends memory[,gcs]] [-table-mib M] [-pg-dsn DSN]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/emulators/resultsflow"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
)

func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

func main() {
	rows := flag.Int("rows", 1_000_000, "rows of the ratio table")
	runs := flag.Int("runs", 3, "interleaved rounds of the ratio figures (medians)")
	per := flag.Int("producer-batch", 8192, "rows per batch the producer hands the tier (the duckdb kind's)")
	backends := flag.String("backends", "memory", "the tier's buckets for the ratio figures: memory, gcs (the stack's emulator: STORAGE_EMULATOR_HOST, NOETL_RESULTS_BUCKET), or both (memory,gcs)")
	tableMiB := flag.Int("table-mib", 1024, "size of the flow's table in MiB (0: skip the flow)")
	dsn := flag.String("pg-dsn", os.Getenv("NOETL_PG_DSN"), "PostgreSQL DSN of the flow's target (default $NOETL_PG_DSN)")
	table := flag.String("pg-table", "bench_results", "the flow's target table (dropped and created)")
	cpuprof := flag.String("cpuprofile", "", "write a CPU profile of the ratio figures to this file")
	flowWhereFlag := flag.String("flow", "process", "where the flow runs: process (the engine's worker in this process, every kind local, reads of the object counted) or stack (the running local stack's deployed functions and runner, through scripts/run, the RSS of the runner, the functions and the supervisor sampled)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: resultsbench [-rows N] [-runs R] [-backends memory[,gcs]] [-table-mib M] [-pg-dsn DSN]")
		flag.PrintDefaults()
	}
	flag.Parse()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "resultsbench: "+f+"\n", a...) }
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "resultsbench:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	out := map[string]any{"bench": "results", "gomaxprocs": runtime.GOMAXPROCS(0), "cpus": runtime.NumCPU()}
	var flowBackend results.Backend
	flowWhere := "in-memory bucket (results.NewMemory)"
	for i, name := range strings.Split(*backends, ",") {
		var be results.Backend
		where := "in-memory bucket (results.NewMemory)"
		switch strings.TrimSpace(name) {
		case "memory":
			be = results.NewMemory()
		case "gcs":
			host := os.Getenv("STORAGE_EMULATOR_HOST")
			bucket := os.Getenv("NOETL_RESULTS_BUCKET")
			if host == "" || bucket == "" {
				fail(fmt.Errorf("backend gcs needs STORAGE_EMULATOR_HOST and NOETL_RESULTS_BUCKET (source .stack/env)"))
			}
			cl, err := storage.NewClient(ctx)
			if err != nil {
				fail(err)
			}
			defer cl.Close()
			be = gcsresults.NewGCS(cl, bucket)
			where = "GCS emulator (fake-gcs-server) at " + host + ", bucket " + bucket
			flowBackend, flowWhere = be, where
		default:
			fail(fmt.Errorf("unknown backend %q (memory or gcs)", name))
		}
		prefix := ""
		if i > 0 {
			prefix = strings.TrimSpace(name) + "_"
		}
		out[prefix+"backend"] = where
		logf("ratio: %d rows × 5 columns, %d rounds, tier on %s", *rows, *runs, where)
		if *cpuprof != "" && i == 0 {
			f, err := os.Create(*cpuprof)
			if err != nil {
				fail(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fail(err)
			}
		}
		r, err := measureRatios(ctx, &results.Store{Backend: be}, *rows, *per, *runs)
		if *cpuprof != "" && i == 0 {
			pprof.StopCPUProfile()
		}
		if err != nil {
			fail(err)
		}
		for k, v := range r {
			out[prefix+k] = v
		}
	}
	if *tableMiB > 0 {
		if *dsn == "" {
			fail(fmt.Errorf("the flow needs -pg-dsn (or NOETL_PG_DSN)"))
		}
		if flowBackend == nil {
			flowBackend = results.NewMemory() // the table's bytes then count in this process's RSS
		}
		debug.FreeOSMemory() // the ratio figures' memory goes back before the idle RSS is read
		n := int64(*tableMiB) << 20 / resultsflow.RowBytes
		if *flowWhereFlag == "stack" {
			repo := os.Getenv("NOETL_REPO_ROOT")
			if repo == "" {
				fail(fmt.Errorf("-flow stack needs the stack's environment (source .stack/env)"))
			}
			logf("flow through the stack's functions and runner: a table of %d rows (~%d MiB) produced, ignored twice, streamed into PostgreSQL", n, *tableMiB)
			f, err := runStackFlow(ctx, repo, n, *dsn, *table, logf)
			if f != nil {
				out["flow_stack"] = f
				out["flow"] = "stack"
				out["peak_rss_mib_over_idle"] = round(f.PeakMiB-f.IdleMiB, 1)
			}
			if err == nil {
				var got int64
				got, err = countRows(ctx, *dsn, *table)
				out["rows_transferred"] = got
				if err == nil && got != n {
					err = fmt.Errorf("PostgreSQL holds %d rows, want %d", got, n)
				}
			}
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			if err != nil {
				fail(err)
			}
			return
		}
		if *flowWhereFlag != "process" {
			fail(fmt.Errorf("-flow %q: want process or stack", *flowWhereFlag))
		}
		cb := &resultsflow.CountingBackend{Backend: flowBackend}
		frs := &results.Store{Backend: cb, Cache: results.NewCache(64 << 20)}
		out["flow_backend"] = flowWhere
		logf("flow: a table of %d rows (~%d MiB) produced, ignored twice, streamed into PostgreSQL; tier on %s", n, *tableMiB, flowWhere)
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
