package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
)

// rerunCmd is `noetl rerun ID [--from STEP] [--workload JSON|@file]`
// (POST /executions/{id}/rerun; docs "Rerun").
func (a *app) rerunCmd() *cobra.Command {
	var (
		from, workload, playbook string
		wait                     bool
		timeout                  time.Duration
	)
	c := &cobra.Command{
		Use:   "rerun ID",
		Short: "Run an ended execution again, reusing the steps before a failed or named step",
		Long: `Start a rerun of an ended execution (POST /executions/{id}/rerun): a new execution,
linked to it as rerun_of, that reuses the recorded results of the step runs that ended
before the step it starts from instead of running them (their side effects are not
repeated), and runs the rest.

--from failed   start from the first step run that failed
--from STEP     start from STEP's first run
(no --from)     run it again from the start, with the same input

--workload is a JSON object, or @FILE holding one, deep-merged over the execution's
recorded workload (a fix). --playbook FILE runs a fixed playbook instead of the
execution's own (its steps are matched by name). Prints the new execution's id, the
step it starts from and the reused step runs; json prints the api's answer. --wait
then follows it to its end (exit 1 unless it ends ok).
A refused rerun (a running execution, a step that never ran, nothing failed) exits 2
with the reason.`,
		Example: `  noetl rerun 914357561465896960 --from failed --workload '{"max_failed": 2}'
  noetl rerun 914357561465896960 --from load --workload @fix.json --wait
  noetl rerun 914357561465896960`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			body := map[string]any{}
			if from != "" {
				body["from"] = from
			}
			if workload != "" {
				wl, err := a.readWorkload(workload)
				if err != nil {
					return err
				}
				body["workload"] = wl
			}
			if playbook != "" {
				src, err := os.ReadFile(playbook)
				if err != nil {
					return fail(ExitInvalid, "--playbook: %v", err)
				}
				body["playbook"] = string(src)
			}
			path := "/executions/" + url.PathEscape(id) + "/rerun"
			b, err := a.call(http.MethodPost, path, body, "execution "+id)
			if err != nil {
				return err
			}
			var got struct {
				ExecutionID   string   `json:"execution_id"`
				Step          string   `json:"step"`
				Run           int      `json:"run"`
				Reused        []string `json:"reused"`
				CopiedObjects int      `json:"copied_objects"`
				CopiedBytes   int64    `json:"copied_bytes"`
			}
			if err := json.Unmarshal(b, &got); err != nil || got.ExecutionID == "" {
				return fail(ExitUnavailable, "api at %s: POST %s answered without an execution_id: %s", a.base(), path, b)
			}
			if a.jsonOut() {
				printJSON(a.stdout, b)
			} else {
				start := "the start"
				if got.Step != "" {
					start = fmt.Sprintf("%s (run %d)", got.Step, got.Run)
				}
				reused := "none"
				if len(got.Reused) > 0 {
					reused = strings.Join(got.Reused, ", ")
				}
				kv := newTable(a.stdout, "rerun", got.ExecutionID)
				kv.row("rerun of", id)
				kv.row("starts from", start)
				kv.row("reused", reused)
				if got.CopiedObjects > 0 {
					kv.row("copied results", fmt.Sprintf("%d objects, %d bytes", got.CopiedObjects, got.CopiedBytes))
				}
				kv.flush()
			}
			if !wait {
				return nil
			}
			return a.rerunEnd(got.ExecutionID, timeout)
		},
	}
	c.Flags().StringVar(&from, "from", "", `where the rerun starts: "failed" or a step name (default: the start)`)
	c.Flags().StringVar(&workload, "workload", "", "JSON object (or @FILE) deep-merged over the execution's recorded workload")
	c.Flags().StringVar(&playbook, "playbook", "", "run this fixed playbook file instead of the execution's own")
	c.Flags().BoolVar(&wait, "wait", false, "follow the rerun to its end (exit 1 unless it ends ok)")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait: give up after this long (exit 1)")
	return c
}

// readWorkload reads a --workload value: a JSON object, @FILE holding
// one, or - for stdin (flagBytes, as run reads it).
func (a *app) readWorkload(v string) (map[string]any, error) {
	text, err := a.flagBytes("--workload", v)
	if err != nil {
		return nil, err
	}
	var wl map[string]any
	if err := jsonx.Unmarshal(text, &wl); err != nil || wl == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return nil, fail(ExitInvalid, "--workload is not a JSON object: %v", err)
	}
	return wl, nil
}

// rerunEnd follows a rerun to its end (rerun --wait): on a terminal its
// progress and summary as run prints them (waitEnd); with --output json
// nothing more on stdout than the api's answer already printed. Either way
// "execution ID ended STATUS in DURATION" and the failures on stderr; exit
// 1 unless ok.
func (a *app) rerunEnd(id string, timeout time.Duration) error {
	var st *inspect.Status
	var err error
	if a.jsonOut() {
		st, err = a.pollEnd(id, timeout, true, true)
	} else {
		st, err = a.waitEndStatus(id, timeout, false, true)
	}
	if st == nil {
		return err
	}
	fmt.Fprintf(a.stderr, "execution %s ended %s in %s\n", id, st.Status, fmtMS(st.DurationMS))
	for _, f := range st.Failures {
		fmt.Fprintln(a.stderr, "  - "+oneLine(f, 0))
	}
	if st.Status != "ok" {
		return &exitError{code: ExitFailed}
	}
	return nil
}
