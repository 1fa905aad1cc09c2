package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wire"
)

func (a *app) resultsCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:   "results",
		Short: "Check stored results against their references, and repair lost ones (admin)",
		Long: `Check the results tier (admin role; see docs/resilience.md "Repair"): verify reads every
stored result the execution logs reference against its generation and digest and
records the lost ones; repair re-derives a lost result whose producer is deterministic
and side-effect free.`,
	}, a.resultsVerifyCmd(), a.resultsRepairCmd())
}

func (a *app) resultsVerifyCmd() *cobra.Command {
	var execution, check string
	c := &cobra.Command{
		Use:   "verify [--execution ID]",
		Short: "Read stored results against their references; report the lost ones",
		Long: `The results scrub (POST /results/verify, admin role; daily in GCP beside GC): every stored
result an execution's log references — every execution with results in the tier, or
--execution's — is read whole, exactly as a read opens it (the generation its reference
records, or a repair of it), and checked against its reference's digest (--check: the
deployment's NOETL_RESULT_READ_CHECK, crc32c by default, or sha256). Each result found lost
(gone, replaced by another generation, or with other bytes) is listed and recorded as a
result.lost event in its execution's log; "noetl results repair URN" may re-derive it.

Prints the executions and results read, the intact ones, the bytes read, and one line per
lost result. Exit 1 when a result is lost, 3 for an unknown --execution.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if execution != "" {
				q.Set("execution_id", execution)
			}
			if check != "" {
				q.Set("check", check)
			}
			path := "/results/verify"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var r wire.ScrubReport
			if err := a.post(path, nil, "execution "+execution, &r, func() {
				fmt.Fprintf(a.stdout, "executions %d, results %d: intact %d, lost %d, unchecked %d (%d bytes read, check %s)\n",
					r.Executions, r.Results, r.Intact, len(r.Lost), r.Unchecked, r.Bytes, r.Check)
				for _, l := range r.Lost {
					fmt.Fprintf(a.stdout, "lost (%s): %s execution %s: %s\n", l.Lost, l.URI, l.ExecutionID, l.Message)
				}
				for _, id := range r.NoRecord {
					fmt.Fprintf(a.stdout, "no record (left to gc): execution %s\n", id)
				}
			}); err != nil {
				return err
			}
			if len(r.Lost) > 0 {
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
	c.Flags().StringVar(&execution, "execution", "", "only this execution's results")
	c.Flags().StringVar(&check, "check", "", "the digest compared: crc32c or sha256 (default the deployment's NOETL_RESULT_READ_CHECK)")
	return c
}

// repairStarted is the api's answer to POST /results/repair.
type repairStarted struct {
	ExecutionID string `json:"execution_id"`
	URN         string `json:"urn"`
	Step        string `json:"step"`
	Task        string `json:"task"`
	Kind        string `json:"kind"`
	RequestID   string `json:"request_id"`
	Status      string `json:"status"`
}

func (a *app) resultsRepairCmd() *cobra.Command {
	var (
		wait   time.Duration
		noWait bool
	)
	c := &cobra.Command{
		Use:   "repair URN",
		Short: "Re-derive a lost result whose producer is deterministic and side-effect free",
		Long: `Re-derive a lost stored result (POST /results/repair, admin role; docs/resilience.md
"Repair"): the api checks that the result is lost and that its producer qualifies — a
duckdb task on an in-memory database (whatever its side-effect barrier: its SQL reaches
nothing outside its sandbox) that streamed the result as a table, outside a loop, whose
attempt recorded its rendered inputs, all of them intact — and refuses anything else
naming the rule it breaks (postgres, http, transfer and the other kinds that read or write
outside the engine; python and shell, not provably side-effect free; a loop iteration's
result; a JSON result). Execute then runs the task again with its recorded inputs into a
scratch object; only if the table it gives has the sha256 the reference records is it put
back at the result's key, as a new generation that reads accept in place of the lost one
(and check against that sha256). Nothing is written otherwise.

It waits (--wait, default 5m; --no-wait returns once it is enqueued) for the outcome in
the execution's log: result.repaired (exit 0) or result.repair_failed (exit 1, with the
reason: the task failed, or gave other bytes: its producer is not deterministic). Exit 2
for a result that cannot be repaired or is intact (409), 3 for an unknown execution or a
URN its log does not reference.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			urn := args[0]
			var r repairStarted
			b, err := a.call(http.MethodPost, "/results/repair", map[string]any{"urn": urn}, "result "+urn)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &r); err != nil {
				return fail(ExitUnavailable, "api at %s: answer to POST /results/repair is not JSON: %v", a.base(), err)
			}
			if noWait {
				if a.jsonOut() {
					printJSON(a.stdout, b)
				} else {
					fmt.Fprintf(a.stdout, "%s: repairing (task %s of step %s, request %s)\n", urn, r.Task, r.Step, r.RequestID)
				}
				return nil
			}
			fmt.Fprintf(a.stderr, "%s: re-running task %s (%s) of step %s in execution %s\n", urn, r.Task, r.Kind, r.Step, r.ExecutionID)
			p := a.newPoller()
			deadline := time.Now().Add(wait)
			for {
				l, _, err := a.fetchEvents(p, r.ExecutionID)
				if err != nil {
					return err
				}
				for i, e := range l.events {
					if e.EventType != types.EvResultRepaired && e.EventType != types.EvResultRepairFailed {
						continue
					}
					out, _ := history.Decode[history.ResultRepaired](e)
					if out.RequestID != r.RequestID {
						continue
					}
					if a.jsonOut() {
						printJSON(a.stdout, l.raw[i])
					} else if e.EventType == types.EvResultRepaired {
						fmt.Fprintf(a.stdout, "%s: repaired (generation %d stands in for the lost %d; sha256 %s)\n", urn, out.Generation, out.Lost, out.SHA256)
					} else {
						fmt.Fprintf(a.stdout, "%s: not repaired: %s\n", urn, out.Message)
					}
					if e.EventType == types.EvResultRepairFailed {
						return &exitError{code: ExitFailed}
					}
					return nil
				}
				if time.Now().After(deadline) {
					return fail(ExitUnavailable, "%s: no outcome of repair request %s after %s (see: noetl events %s)", urn, r.RequestID, wait, r.ExecutionID)
				}
				time.Sleep(a.interval)
			}
		},
	}
	c.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the outcome")
	c.Flags().BoolVar(&noWait, "no-wait", false, "return once the repair is enqueued")
	return c
}
