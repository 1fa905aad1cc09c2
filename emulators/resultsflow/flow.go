// Package resultsflow runs the result tier's end-to-end flow (README
// "Stored results and the runner"): a playbook in which one step produces
// a table with DuckDB (streamed into the tier), the next steps ignore it,
// and a last step streams it into PostgreSQL with transfer (source type
// result). It runs the playbook through the engine's worker in the
// calling process (the execution's state and queue in memory,
// shared/control/controltest) with every kind local, so that the reads of
// the table's object can be counted (CountingBackend) and the memory of
// the one process that runs it measured. scripts/bench results measures
// it at 1 GiB; the e2e test TestResultFlowIntoPostgres runs it at 20 MiB
// against the stack's GCS emulator and PostgreSQL, and
// TestResultFlowThroughRunner runs Playbook through the deployed
// functions, the duckdb and transfer steps in the runner on its result
// grants.
package resultsflow

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/runner/kinds"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/allkinds"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// RowBytes is about the Feather bytes of one row of flowPlaybook's
// table (id 8, score 8, active 1 bit, name ~12 + 4, payload 200 + ~7 + 4).
const RowBytes = 244

// Playbook: start (re)creates PostgreSQL table table; produce makes a
// table of rows rows with duckdb's range() (streamed into the tier by the
// kind's sink); ignore_a and ignore_b run after it without reading it
// (ignore_b reads its extracted row count only); load streams it into
// table with transfer (source type result).
func Playbook(rows int64, dsn, table string) string {
	return fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: bench_results, path: bench/results}
workflow:
  - step: start
    tool:
      kind: postgres
      connection: %[2]q
      command: >-
        DROP TABLE IF EXISTS %[3]s;
        CREATE TABLE %[3]s (id BIGINT PRIMARY KEY, score DOUBLE PRECISION, active BOOLEAN, name TEXT, payload TEXT)
    next: {arcs: [{step: produce}]}
  - step: produce
    tool:
      kind: duckdb
      timeout_ms: 3600000
      query: >-
        SELECT i AS id, i * 0.5 AS score, i %% 2 = 0 AS active, 'name-' || CAST(i AS VARCHAR) AS name,
        repeat('x', 200) || CAST(i AS VARCHAR) AS payload FROM range(%[1]d) t(i)
    next: {arcs: [{step: ignore_a}]}
  - step: ignore_a
    tool: {kind: noop}
    next: {arcs: [{step: ignore_b}]}
  - step: ignore_b
    tool: {kind: noop, input: {rows: "{{ produce.extracted.rows }}"}}
    next: {arcs: [{step: load}]}
  - step: load
    tool:
      kind: transfer
      timeout_ms: 3600000
      source: {type: result, ref: "{{ produce._ref }}"}
      target: {type: postgres, connection: %[2]q, table: %[3]s, mode: replace}
`, rows, dsn, table)
}

// CountingBackend counts the opens and whole reads of every key.
type CountingBackend struct {
	results.Backend
	mu    sync.Mutex
	reads map[string]int
}

func (c *CountingBackend) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[key]++
}

func (c *CountingBackend) Get(ctx context.Context, key string) ([]byte, error) {
	c.count(key)
	return c.Backend.Get(ctx, key)
}

func (c *CountingBackend) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	c.count(key)
	return c.Backend.Open(ctx, key, generation)
}

// ReadsOf is how many times key was opened or read whole.
func (c *CountingBackend) ReadsOf(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key]
}

// procStatus reads a field of /proc/self/status in KiB (VmRSS, VmHWM).
func procStatus(field string) int64 { return ProcStatus("self", field) }

// ProcStatus reads a field of /proc/<pid>/status in KiB (VmRSS, VmHWM;
// pid "self" for this process); -1 when the process or field is gone.
func ProcStatus(pid, field string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
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

// Step is one step's figures.
type Step struct {
	// Step is the step's name; Status how it ended.
	Step   string `json:"step"`
	Status string `json:"status"`
	// Seconds is the unit's wall time.
	Seconds float64 `json:"s"`
	// PeakMiB is the process's peak RSS during the step (VmHWM, reset
	// before it), MiB.
	PeakMiB float64 `json:"peak_rss_mib"`
	// ReadsOfIt is the table object's opens and whole reads so far.
	ReadsOfIt int `json:"reads_of_table"`
}

// Result is what Run measured.
type Result struct {
	// Rows is the table's row count; TableBytes its object's size.
	Rows       int64 `json:"rows"`
	TableBytes int64 `json:"table_bytes"`
	// IdleMiB is the process's RSS before the playbook started; PeakMiB
	// its peak RSS over the steps (MiB).
	IdleMiB float64 `json:"idle_rss_mib"`
	PeakMiB float64 `json:"peak_rss_mib"`
	// Steps are the units run, in order.
	Steps []Step `json:"steps"`
	// ReadsBefore counts the table object's opens and whole reads from
	// its write to the consumer's start (the ignoring steps: want 0);
	// ReadsLoad those of the consumer.
	ReadsBefore int `json:"reads_between_producer_and_consumer"`
	ReadsLoad   int `json:"reads_by_consumer"`
	// Status is the execution's status; Transferred the consumer's
	// rows_transferred.
	Status      string `json:"status"`
	Transferred any    `json:"rows_transferred"`
	// Seconds is the playbook's wall time.
	Seconds float64 `json:"s"`
}

func kib2mib(k int64) float64 { return math.Round(float64(k)/1024*10) / 10 }

func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

// Run runs Playbook through the engine's worker in this process,
// one unit at a time (the execution's state and queue in memory,
// controltest), with the tools the control plane's execute would hold if
// it ran the duckdb and transfer kinds itself: the results store rs over
// cb, PostgreSQL at dsn. It records each step's peak RSS (VmHWM reset
// before the step) and how often the table's object was read.
func Run(ctx context.Context, cb *CountingBackend, rs *results.Store, rows int64, dsn, table string, logf func(string, ...any)) (*Result, error) {
	reg, closeTools := allkinds.Default(kinds.Options{Results: rs})
	defer closeTools()
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := &worker.Worker{Control: env.Control, Store: env.Control.Store, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
		Tools: reg, Results: rs, ToolTimeout: time.Hour}
	const id = "bench-results"
	idle := procStatus("VmRSS")
	out := &Result{Rows: rows, IdleMiB: kib2mib(idle)}
	if err := env.Launch(ctx, id, "", Playbook(rows, dsn, table), nil); err != nil {
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
		fs := Step{Step: cmd.Step, Seconds: round(time.Since(ts).Seconds(), 2), PeakMiB: kib2mib(hwm)}
		if ss := st.Steps[cmd.Step]; ss != nil {
			fs.Status = string(ss.Status)
			if ss.Error != nil {
				logf("step %s: %v", cmd.Step, ss.Error)
			}
		}
		if cmd.Step == "produce" {
			ref, _ := st.Results["produce"].(map[string]any)
			inner, _ := ref[results.RefKey].(map[string]any)
			if inner == nil {
				return nil, fmt.Errorf("produce's result was not stored: %v", st.Results["produce"])
			}
			key, _ = inner["key"].(string)
			out.TableBytes, _ = inner["bytes"].(int64)
		}
		if key != "" {
			fs.ReadsOfIt = cb.ReadsOf(key)
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
