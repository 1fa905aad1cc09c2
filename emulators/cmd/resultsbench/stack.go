package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/emulators/resultsflow"
)

// stackFlow is the flow's figures when it runs through the deployed
// functions of the local stack (-flow stack): the engine's processes are
// the functions (execute among them) and the runner (the duckdb and
// transfer steps, on their result grants); the supervisor hosts the
// emulators of the managed services (the GCS emulator, which holds the
// bucket's objects in memory, Cloud Tasks, the Pub/Sub bridges) and the
// stack's results gateway, and PostgreSQL is the flow's target: both are
// reported, not summed.
type stackFlow struct {
	ExecutionID string  `json:"execution_id"`
	Status      string  `json:"status"`
	Rows        int64   `json:"rows"`
	Seconds     float64 `json:"s"`
	// IdleMiB and PeakMiB are the summed RSS of the engine's processes
	// (functions and runner) before the run and at its highest (sampled
	// every 100 ms).
	IdleMiB float64 `json:"idle_rss_mib"`
	PeakMiB float64 `json:"peak_rss_mib"`
	// Processes are each group's idle and peak RSS in MiB (runner,
	// functions, supervisor, postgres).
	Processes map[string][2]float64 `json:"processes"`
}

// stackGroups returns the process groups of the stack's functions and
// runner, and the supervisor's pid, from <stack>/pids and stack.pid.
func stackGroups(stackDir string) (map[string]int, error) {
	out := map[string]int{}
	for _, n := range []string{"runner", "functions"} {
		b, err := os.ReadFile(filepath.Join(stackDir, "pids", n+".pgid"))
		if err != nil {
			return nil, fmt.Errorf("the stack's %s: %w (is the stack up? scripts/up)", n, err)
		}
		out[n], _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(filepath.Join(stackDir, "stack.pid"))
	if err != nil {
		return nil, fmt.Errorf("the stack's supervisor: %w", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	out["supervisor"] = -pid // a single process, not a group
	return out, nil
}

// rssByGroup returns the RSS in MiB of every group of groups (a negative
// value is one pid) and of PostgreSQL's processes (command "postgres").
func rssByGroup(groups map[string]int) map[string]float64 {
	out := map[string]float64{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		comm := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		name := ""
		for n, g := range groups {
			if (g > 0 && pgrp == g) || (g < 0 && pid == -g) {
				name = n
			}
		}
		if name == "" && comm == "postgres" {
			name = "postgres"
		}
		if name == "" {
			continue
		}
		out[name] += float64(max(resultsflow.ProcStatus(e.Name(), "VmRSS"), 0)) / 1024
	}
	return out
}

// runStackFlow runs resultsflow.Playbook through the stack's api
// (scripts/run) while sampling the stack's RSS.
func runStackFlow(ctx context.Context, repo string, rows int64, dsn, table string, logf func(string, ...any)) (*stackFlow, error) {
	stackDir := os.Getenv("NOETL_STACK_DIR")
	if stackDir == "" {
		stackDir = filepath.Join(repo, ".stack")
	}
	groups, err := stackGroups(stackDir)
	if err != nil {
		return nil, err
	}
	pb := filepath.Join(os.TempDir(), fmt.Sprintf("resultsbench-%d.yaml", os.Getpid()))
	if err := os.WriteFile(pb, []byte(resultsflow.Playbook(rows, dsn, table)), 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(pb)
	idle := rssByGroup(groups)
	peak := map[string]float64{}
	sum := func(m map[string]float64) float64 {
		s := 0.0
		for n, v := range m {
			if n == "runner" || n == "functions" {
				s += v
			}
		}
		return s
	}
	f := &stackFlow{Rows: rows, IdleMiB: round(sum(idle), 1), Processes: map[string][2]float64{}}
	peakSum := sum(idle)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "scripts", "run"), pb, "--quiet", "--timeout", "120m", "-o", "json")
	var so bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	var runErr error
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case <-tick.C:
			cur := rssByGroup(groups)
			for n, v := range cur {
				peak[n] = max(peak[n], v)
			}
			peakSum = max(peakSum, sum(cur))
			if time.Since(last) > time.Minute {
				last = time.Now()
				logf("flow through the stack: %s, RSS %.0f MiB (peak %.0f, idle %.0f)", time.Since(t0).Round(time.Second), sum(cur), peakSum, f.IdleMiB)
			}
		}
	}
	f.Seconds = round(time.Since(t0).Seconds(), 1)
	f.PeakMiB = round(peakSum, 1)
	for n, v := range idle {
		f.Processes[n] = [2]float64{round(v, 1), round(max(peak[n], v), 1)}
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	var res struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status"`
	}
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &res)
	f.ExecutionID, f.Status = res.ExecutionID, res.Status
	if runErr != nil || f.Status != "ok" {
		return f, fmt.Errorf("scripts/run: %v (status %q)\n%s", runErr, f.Status, so.String())
	}
	return f, nil
}

// countRows counts the rows of table.
func countRows(ctx context.Context, dsn, table string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n)
	return n, err
}
