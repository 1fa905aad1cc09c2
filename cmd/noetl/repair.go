package main

import (
	"time"

	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/wire"
)

func (a *app) rebuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild ID",
		Short: "Rebuild an execution's event read model from the events topic",
		Long: `Rebuild an execution's event read model (the event batches GET /executions/{id}/events
reads) from the events topic (POST /executions/{id}/rebuild, operator role): the api
seeks the topic's replay subscription (events-replay: it keeps acknowledged messages
for 7 days) to the execution's creation, pulls from there, and writes every signed
batch of the execution that the read model lacks (batches are keyed by their id: a
rebuild is idempotent and leaves what is there alone). One rebuild runs at a time.

It prints what it found and wrote, then what it could not rebuild: events older than
the subscription's retention, and the gaps the rebuilt log shows (no start event; for
an ended execution no end event, or a step run without its end). Exit 0 when the log
is complete, 1 when it has gaps (listed), 2 while another rebuild runs (409), 3 for an
id that is neither on record nor an execution id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var r wire.RebuildReport // the api answers POST /executions/{id}/rebuild with it
			err := a.post("/executions/"+url.PathEscape(id)+"/rebuild", nil, "execution "+id, &r, func() {
				fmt.Fprintf(a.stdout, "execution %s: sought the replay subscription to %s, scanned %d messages\n", id, r.SeekTime.Format(time.RFC3339Nano), r.Scanned)
				fmt.Fprintf(a.stdout, "batches found %d: written %d (%d events), already there %d, refused (unsigned or undecodable) %d\n", r.Batches, r.Written, r.WrittenEvents, r.Present, r.Refused)
				fmt.Fprintf(a.stdout, "events: %d before, %d after\n", r.EventsBefore, r.Events)
				if len(r.Missing) == 0 {
					fmt.Fprintln(a.stdout, "complete")
				}
				for _, m := range r.Missing {
					fmt.Fprintln(a.stdout, "cannot rebuild: "+m)
				}
			})
			if err != nil {
				return err
			}
			if !r.Complete {
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
}

// gcReport is the api's answer to POST /gc (wire.GCReport), or to POST
// /gc?execution_id= (Verdict, Deleted, DryRun and the execution's id).
type gcReport struct {
	wire.GCReport
	ExecutionID string `json:"execution_id"`
	Verdict     string `json:"verdict"`
}

func (a *app) gcCmd() *cobra.Command {
	var (
		dry, apply, force bool
		execution         string
	)
	c := &cobra.Command{
		Use:   "gc",
		Short: "Find (and with --apply delete) the results of executions whose lifetime ended",
		Long: `Delete results by lifetime (POST /gc, admin role): a dry run unless --apply is given
(it decides and reports what it would delete; the daily job in GCP applies). An execution's results live exactly
as long as its record: they are deleted (every object under the execution's prefix)
once the execution ended more than NOETL_RETENTION_DAYS ago (Terraform retention_days)
or its record is gone, and objects written with output.store.ttl once their ttl
passed. They are never deleted while the execution runs (or its parent runs), nor
while a pending DLQ entry names it. The results bucket's lifecycle rule is only a
backstop, set longer.

--execution ID deletes one execution's results now when its verdict allows it, and
with --force also when it ended within its retention (never when it runs or a DLQ
entry holds it); with --apply only. --dry-run (the default) decides and reports,
deletes nothing.

Prints the objects listed and deleted and the executions by verdict: live, dlq, kept
(ended within its retention), expired, orphan (no record), ttl. With --execution:
the verdict and the objects deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if dry && apply {
				return fail(ExitInvalid, "--dry-run and --apply contradict each other (a dry run is the default)")
			}
			if apply {
				q.Set("apply", "true")
			}
			if execution != "" {
				q.Set("execution_id", execution)
				if force {
					q.Set("force", "true")
				}
			} else if force {
				return fail(ExitInvalid, "--force needs --execution")
			}
			path := "/gc"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var r gcReport
			return a.post(path, nil, "gc", &r, func() {
				verb := "deleted"
				if r.DryRun {
					verb = "would delete"
				}
				if execution != "" {
					fmt.Fprintf(a.stdout, "execution %s: %s, %s %d objects\n", execution, r.Verdict, verb, r.Deleted)
					return
				}
				fmt.Fprintf(a.stdout, "objects %d (%d bytes), %s %d (%d bytes)\n", r.Objects, r.Bytes, verb, r.Deleted, r.DeletedBytes)
				var vs []string
				for v, n := range r.Executions {
					vs = append(vs, fmt.Sprintf("%s %d", v, n))
				}
				sort.Strings(vs)
				fmt.Fprintf(a.stdout, "executions: %s\n", strings.Join(vs, ", "))
				for _, id := range r.DeletedExecutions {
					fmt.Fprintf(a.stdout, "%s %s\n", verb, id)
				}
			})
		},
	}
	c.Flags().BoolVar(&apply, "apply", false, "delete what the rules doom (without it: a dry run)")
	c.Flags().BoolVar(&dry, "dry-run", false, "decide and report, delete nothing (the default)")
	c.Flags().StringVar(&execution, "execution", "", "only this execution's results")
	c.Flags().BoolVar(&force, "force", false, "with --execution: also when it ended within its retention")
	return c
}
