package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// flowRowBytes is about the Feather bytes of one row of flowPlaybook's
// table (id 8, score 8, active 1 bit, name ~12 + 4, payload 200 + ~7 + 4).
const flowRowBytes = 244

// flowPlaybook: start produces a table of rows rows with duckdb's range()
// (streamed into the tier by the kind's sink); ignore_a and ignore_b run
// after it without reading it (ignore_b reads its extracted row count
// only); load streams it into PostgreSQL table table with transfer
// (source type result).
func flowPlaybook(rows int64, dsn, table string) string {
	return fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: bench_results, path: bench/results}
workflow:
  - step: start
    tool:
      kind: duckdb
      query: >-
        SELECT i AS id, i * 0.5 AS score, i %% 2 = 0 AS active, 'name-' || CAST(i AS VARCHAR) AS name,
        repeat('x', 200) || CAST(i AS VARCHAR) AS payload FROM range(%d) t(i)
    next: {arcs: [{step: ignore_a}]}
  - step: ignore_a
    tool: {kind: noop}
    next: {arcs: [{step: ignore_b}]}
  - step: ignore_b
    tool: {kind: noop, input: {rows: "{{ start.extracted.rows }}"}}
    next: {arcs: [{step: load}]}
  - step: load
    tool:
      kind: transfer
      source: {type: result, ref: "{{ start._ref }}"}
      target: {type: postgres, connection: %q, table: %s, mode: replace}
`, rows, dsn, table)
}

// countingBackend counts the opens and whole reads of every key.
type countingBackend struct {
	results.Backend
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingBackend) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[key]++
}

func (c *countingBackend) Get(ctx context.Context, key string) ([]byte, error) {
	c.count(key)
	return c.Backend.Get(ctx, key)
}

func (c *countingBackend) Open(ctx context.Context, key string) (results.Object, error) {
	c.count(key)
	return c.Backend.Open(ctx, key)
}

func (c *countingBackend) readsOf(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key]
}

// procStatus reads a field of /proc/self/status in KiB (VmRSS, VmHWM).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// resetPeak resets the process's peak RSS (VmHWM) to its current RSS
// (Linux clear_refs 5); false when the kernel refuses.
func resetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// flowStep is one step's figures.
type flowStep struct {
	Step      string  `json:"step"`
	Status    string  `json:"status"`
	Seconds   float64 `json:"s"`
	PeakMiB   float64 `json:"peak_rss_mib"`
	ReadsOfIt int     `json:"reads_of_table"`
}

// flowResult is what runFlow measured.
type flowResult struct {
	Rows        int64      `json:"rows"`
	TableBytes  int64      `json:"table_bytes"`
	IdleMiB     float64    `json:"idle_rss_mib"`
	PeakMiB     float64    `json:"peak_rss_mib"`
	Steps       []flowStep `json:"steps"`
	ReadsBefore int        `json:"reads_between_producer_and_consumer"`
	ReadsLoad   int        `json:"reads_by_consumer"`
	Status      string     `json:"status"`
	Transferred any        `json:"rows_transferred"`
	Seconds     float64    `json:"s"`
}

func kib2mib(k int64) float64 { return round(float64(k)/1024, 1) }

// runFlow runs flowPlaybook through the engine's worker in this process,
// one unit at a time (the execution's state and queue in memory,
// controltest), with the tools the control plane's execute would hold if
// it ran the duckdb and transfer kinds itself: the results store rs over
// cb, PostgreSQL at dsn. It records each step's peak RSS (VmHWM reset
// before the step) and how often the table's object was read.
func runFlow(ctx context.Context, cb *countingBackend, rs *results.Store, rows int64, dsn, table string, logf func(string, ...any)) (*flowResult, error) {
	reg, closeTools := tools.Default(tools.DefaultOptions{Results: rs})
	defer closeTools()
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := &worker.Worker{Control: env.Control, Store: env.Control.Store, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
		Tools: reg, Results: rs, ToolTimeout: time.Hour}
	const id = "bench-results"
	idle := procStatus("VmRSS")
	out := &flowResult{Rows: rows, IdleMiB: kib2mib(idle)}
	if err := env.Launch(ctx, id, "", flowPlaybook(rows, dsn, table), nil); err != nil {
		return nil, err
	}
	t0 := time.Now()
	var key string
	peak := idle
	for range 100 {
		cmd, ok := env.Tasks.Take(func(c types.Command) bool { return c.Kind == types.CmdRunStep || c.Kind == "" })
		if !ok {
			break
		}
		env.Clock.Set(cmd.NotBefore)
		resetPeak()
		ts := time.Now()
		logf("step %s", cmd.Step)
		if err := w.Run(ctx, cmd, worker.Delivery{TaskName: cmd.TaskName()}); err != nil {
			return nil, fmt.Errorf("delivery of %s: %w", cmd.Step, err)
		}
		hwm := procStatus("VmHWM")
		peak = max(peak, hwm)
		st := env.State(ctx, id).State
		fs := flowStep{Step: cmd.Step, Seconds: round(time.Since(ts).Seconds(), 2), PeakMiB: kib2mib(hwm)}
		if ss := st.Steps[cmd.Step]; ss != nil {
			fs.Status = string(ss.Status)
			if ss.Error != nil {
				logf("step %s: %v", cmd.Step, ss.Error)
			}
		}
		if cmd.Step == "start" {
			ref, _ := st.Results["start"].(map[string]any)
			inner, _ := ref[results.RefKey].(map[string]any)
			if inner == nil {
				return nil, fmt.Errorf("start's result was not stored: %v", st.Results["start"])
			}
			key, _ = inner["key"].(string)
			out.TableBytes, _ = inner["bytes"].(int64)
		}
		if key != "" {
			fs.ReadsOfIt = cb.readsOf(key)
			if cmd.Step == "load" {
				out.ReadsLoad = fs.ReadsOfIt - out.ReadsBefore
			} else {
				out.ReadsBefore = fs.ReadsOfIt
			}
		}
		logf("step %s: %s in %.1fs, peak RSS %.0f MiB", cmd.Step, fs.Status, fs.Seconds, fs.PeakMiB)
		out.Steps = append(out.Steps, fs)
	}
	st := env.State(ctx, id).State
	out.Status = string(st.Status)
	if r, ok := st.Results["load"].(map[string]any); ok {
		out.Transferred = r["rows_transferred"]
	}
	out.PeakMiB = kib2mib(peak)
	out.Seconds = round(time.Since(t0).Seconds(), 1)
	if st.Status != engine.ExecOK {
		return out, fmt.Errorf("execution ended %s", st.Status)
	}
	return out, nil
}
