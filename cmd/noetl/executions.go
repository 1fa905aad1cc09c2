package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// executionStatuses are the values of list --status.
var executionStatuses = []string{"requested", "running", "ok", "failed", "canceled"}

func (a *app) listCmd() *cobra.Command {
	var (
		status, playbook, creator, before string
		limit                             int
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List executions, newest first",
		Long: `List executions, newest first (GET /executions): id, status, playbook, creation and
last update times, parent execution. --status is one of ` + strings.Join(executionStatuses, ", ") + `;
--playbook is the playbook as list shows it (its metadata.path, else its metadata.name);
--creator the principal that started them (operators only: below the operator role the
api lists the caller's own executions whatever --creator says).
--before CURSOR lists the page after the one that ended with the execution the cursor
names: "<created_at>,<execution_id>" of that page's last entry. When a page is full
(--limit entries) the table is followed, on stderr, by the command that lists the next.
json prints {"executions": [...]} (each with its creator and created_at: the next
page's cursor is the last entry's created_at + "," + execution_id).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := listQuery(status, executionStatuses, limit)
			if err != nil {
				return err
			}
			if playbook != "" {
				q.Set("playbook", playbook)
			}
			if creator != "" {
				q.Set("creator", creator)
			}
			if before != "" {
				q.Set("before", before)
			}
			var body struct {
				Executions []struct {
					ExecutionID string    `json:"execution_id"`
					ParentID    string    `json:"parent_id"`
					Playbook    string    `json:"playbook"`
					Status      string    `json:"status"`
					CreatedAt   time.Time `json:"created_at"`
					UpdatedAt   time.Time `json:"updated_at"`
					RerunOf     string    `json:"rerun_of"`
				} `json:"executions"`
			}
			return a.showList("/executions?"+q.Encode(), "executions", &body, []string{"EXECUTION", "STATUS", "PLAYBOOK", "CREATED", "UPDATED", "PARENT", "RERUN OF"}, func(t *table) int {
				for _, e := range body.Executions {
					t.row(e.ExecutionID, e.Status, e.Playbook, fmtTime(e.CreatedAt), fmtTime(e.UpdatedAt), e.ParentID, e.RerunOf)
				}
				if n := len(body.Executions); n > 0 && n == limit {
					last := body.Executions[n-1]
					defer fmt.Fprintf(a.stderr, "more: scripts/noetl list %s--before '%s,%s'\n", nextPageFlags(cmd), last.CreatedAt.UTC().Format(time.RFC3339Nano), last.ExecutionID)
				}
				return len(body.Executions)
			}, "no executions match")
		},
	}
	c.Flags().StringVar(&status, "status", "", "only executions with this status ("+strings.Join(executionStatuses, "|")+")")
	c.Flags().StringVar(&playbook, "playbook", "", "only executions of this playbook (metadata.path, else metadata.name)")
	c.Flags().StringVar(&creator, "creator", "", "only executions started by this principal (operators)")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many executions (the api allows 1..1000)")
	c.Flags().StringVar(&before, "before", "", `list the executions after this cursor, "<created_at>,<execution_id>" of the previous page's last entry`)
	return c
}

// nextPageFlags repeats the list flags the user gave but --before, each
// followed by a blank, for the next page's command.
func nextPageFlags(cmd *cobra.Command) string {
	var b strings.Builder
	for _, name := range []string{"status", "playbook", "creator", "limit"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			fmt.Fprintf(&b, "--%s %s ", name, shellQuote(f.Value.String()))
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// eventList is GET /executions/{id}/events, each event kept raw (json
// output prints them as received) and decoded.
type eventList struct {
	raw    []json.RawMessage
	events []types.Event
}

// fetchEvents reads the events of an execution once (through p when
// polling; p == nil: a single request).
func (a *app) fetchEvents(p *poller, id string) (*eventList, []byte, error) {
	b, err := a.getVia(p, "/executions/"+url.PathEscape(id)+"/events", "execution "+id)
	if err != nil || b == nil {
		return nil, nil, err
	}
	var body struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, nil, fail(ExitUnavailable, "api at %s: events of %s are not JSON: %v", a.base(), id, err)
	}
	l := &eventList{raw: body.Events, events: make([]types.Event, len(body.Events))}
	for i, r := range body.Events {
		if err := json.Unmarshal(r, &l.events[i]); err != nil {
			return nil, nil, fail(ExitUnavailable, "api at %s: event %d of %s: %v", a.base(), i, id, err)
		}
	}
	return l, b, nil
}

// getVia GETs path once (p == nil: a.call) or through the poller p (nil
// body and error: a transient failure to retry).
func (a *app) getVia(p *poller, path, what string) ([]byte, error) {
	if p != nil {
		return p.get(path, what)
	}
	return a.call(http.MethodGet, path, nil, what)
}

func (a *app) describeCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "describe ID",
		ValidArgsFunction: a.completeExecutionIDs,
		Aliases:           []string{"status"},
		Short:             "Show an execution: steps with status, runs, durations, attempts, loops, failures",
		Long: `Show an execution (GET /executions/{id} and its events): status, playbook, times,
then one row per step (in the order the steps first ran): status, current run and
number of runs, duration, task attempts and failed attempts (counted from the
task.attempt.* events), loop progress (done/total, mode, max_in_flight) and error;
then the execution's failures. json prints the api's status document with
"attempts" and "failed_attempts" added to each step. "status" is an alias.
Exit 3 for an unknown id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.describe(args[0]) },
	}
}

func (a *app) describe(id string) error {
	var st inspect.Status
	raw, err := a.getJSON("/executions/"+url.PathEscape(id), "execution "+id, &st)
	if err != nil {
		return err
	}
	evs, _, err := a.fetchEvents(nil, id)
	if err != nil {
		return err
	}
	stats := inspect.AttemptStats(evs.events)
	if a.jsonOut() {
		var m map[string]any
		if err := jsonx.Unmarshal(raw, &m); err != nil {
			return fail(ExitUnavailable, "api at %s: status of %s is not JSON: %v", a.base(), id, err)
		}
		if steps, ok := m["steps"].(map[string]any); ok {
			for name, v := range steps {
				sv, ok := v.(map[string]any)
				if !ok {
					continue
				}
				s := stats[name]
				if s == nil {
					s = &inspect.StepStats{}
				}
				sv["attempts"], sv["failed_attempts"] = s.Attempts, s.FailedAttempts
			}
		}
		printValue(a.stdout, m)
		return nil
	}
	w := a.stdout
	kv := newTable(w, "execution", st.ExecutionID)
	kv.row("playbook", st.Playbook)
	kv.row("version", str(st.Version))
	kv.row("status", string(st.Status))
	if st.ParentID != "" {
		kv.row("parent", st.ParentID)
	}
	if st.RerunOf != "" {
		kv.row("rerun of", st.RerunOf)
	}
	kv.row("created", fmtTime(st.CreatedAt))
	kv.row("started", fmtTime(st.StartedAt))
	kv.row("finished", fmtTime(st.FinishedAt))
	kv.row("duration", fmtMS(st.DurationMS))
	kv.row("events", strconv.Itoa(len(evs.events)))
	kv.flush()
	fmt.Fprintln(w)
	names := make([]string, 0, len(st.Steps))
	for n := range st.Steps {
		names = append(names, n)
	}
	inspect.StepOrder(names, stats)
	t := newTable(w, "STEP", "STATUS", "RUN", "RUNS", "DURATION", "ATTEMPTS", "FAILED", "LOOP", "ERROR")
	for _, n := range names {
		s := st.Steps[n]
		at, fa := 0, 0
		if ss := stats[n]; ss != nil {
			at, fa = ss.Attempts, ss.FailedAttempts
		}
		loop := ""
		if s.Loop != nil {
			loop = fmt.Sprintf("%d/%d", s.Loop.Done, s.Loop.Total)
			if s.Loop.Mode != "" {
				loop += " " + s.Loop.Mode
			}
			if s.Loop.MaxInFlight > 0 {
				loop += fmt.Sprintf(" (max_in_flight %d)", s.Loop.MaxInFlight)
			}
		}
		status := string(s.Status)
		if s.ReusedFrom != "" {
			status += " (reused)"
		}
		t.row(n, status, strconv.Itoa(s.Run), strconv.Itoa(s.Runs), fmtMS(s.DurationMS), strconv.Itoa(at), strconv.Itoa(fa), loop, oneLine(str(s.Error), 100))
	}
	t.flush()
	if len(st.Failures) > 0 {
		fmt.Fprintln(w, "\nfailures:")
		for _, f := range st.Failures {
			fmt.Fprintln(w, "  - "+oneLine(f, 0))
		}
	}
	return nil
}

func (a *app) eventsCmd() *cobra.Command {
	var (
		follow bool
		filter eventFilter
	)
	c := &cobra.Command{
		Use:               "events ID",
		ValidArgsFunction: a.completeExecutionIDs,
		Short:             "Print an execution's events (optionally following them)",
		Long: `Print an execution's events in the api's causal order (GET /executions/{id}/events).
table: one line per event (seq, time, type, step and run, task, iteration, attempt,
status, duration); json: the api's {"execution_id", "count", "events"} object.

--step NAME and --type TYPE (each repeatable or comma-separated) keep the events of
those steps and of those types; a TYPE also matches the types it prefixes at a dot
("task.attempt" keeps task.attempt.started, .done and .failed). json then counts the
events kept. Both apply to --follow too.

--follow polls and prints each new event once (by event_id; json: one event object
per line) until the execution has ended, its log is complete (playbook.finished, the
end of every started step run and iteration, every iteration of an ok loop) and the
list has stopped growing for 2 s; a log still incomplete stops after 30 s without a
new event. Events are projected in any order: each poll prints the new ones in the
api's order, never one twice. An unknown id exits 3 at once; an api that stops answering for
30 s exits 4.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if follow {
				return a.followEvents(args[0], filter)
			}
			return a.events(args[0], filter)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until the execution ends")
	c.Flags().StringSliceVar(&filter.steps, "step", nil, "only the events of this step (repeatable, or comma-separated)")
	c.Flags().StringSliceVar(&filter.types, "type", nil, `only the events of this type, or of the types it prefixes at a dot ("task.attempt"; repeatable, or comma-separated)`)
	return c
}

// eventFilter is events' --step and --type.
type eventFilter struct{ steps, types []string }

// active reports whether any filter is set.
func (f eventFilter) active() bool { return len(f.steps) > 0 || len(f.types) > 0 }

// keep reports whether e passes the filter.
func (f eventFilter) keep(e types.Event) bool {
	if len(f.steps) > 0 && !contains(f.steps, e.Step) {
		return false
	}
	if len(f.types) == 0 {
		return true
	}
	for _, t := range f.types {
		if string(e.EventType) == t || strings.HasPrefix(string(e.EventType), strings.TrimSuffix(t, ".")+".") {
			return true
		}
	}
	return false
}

// exists returns the execution's status document (ExitNotFound for an
// unknown id); p != nil polls.
func (a *app) exists(p *poller, id string) (*inspect.Status, error) {
	b, err := a.getVia(p, "/executions/"+url.PathEscape(id), "execution "+id)
	if err != nil || b == nil {
		return nil, err
	}
	var st inspect.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fail(ExitUnavailable, "api at %s: status of %s is not JSON: %v", a.base(), id, err)
	}
	return &st, nil
}

func (a *app) events(id string, filter eventFilter) error {
	evs, raw, err := a.fetchEvents(nil, id)
	if err != nil {
		return err
	}
	if len(evs.events) == 0 {
		// The events api answers an empty list for any id: tell an
		// unknown execution from one whose events are not projected yet.
		if _, err := a.exists(nil, id); err != nil {
			return err
		}
	}
	if a.jsonOut() {
		if !filter.active() {
			printJSON(a.stdout, raw)
			return nil
		}
		kept := []json.RawMessage{}
		for i, e := range evs.events {
			if filter.keep(e) {
				kept = append(kept, evs.raw[i])
			}
		}
		printValue(a.stdout, map[string]any{"execution_id": id, "count": len(kept), "events": kept})
		return nil
	}
	for _, e := range evs.events {
		if filter.keep(e) {
			fmt.Fprintln(a.stdout, eventLine(e))
		}
	}
	return nil
}

// eventLine is one event as a table line.
func eventLine(e types.Event) string {
	step := e.Step
	if e.StepRun > 1 {
		step += "#" + strconv.Itoa(e.StepRun)
	}
	iter, att, dur := "", "", ""
	if e.Iteration != nil {
		iter = "i=" + strconv.Itoa(*e.Iteration)
	}
	if e.Attempt > 0 {
		att = "a=" + strconv.Itoa(e.Attempt)
	}
	if e.DurationMS > 0 {
		dur = fmtMS(e.DurationMS)
	}
	ts := ""
	if t := e.Timestamp.Time; !t.IsZero() {
		ts = t.UTC().Format("15:04:05.000")
	}
	return strings.TrimRight(fmt.Sprintf("%5d  %-12s  %-26s  %-20s  %-14s  %-7s  %-4s  %-8s  %s",
		e.Seq, ts, e.EventType, step, e.Task, iter, att, e.Status, dur), " ")
}

// SettleIncomplete is how many settles (2 s each) events --follow waits
// for a new event of an ended execution whose log is not complete yet
// before it stops: 30 s.
const SettleIncomplete = 15

// followEvents prints new events until the execution has ended, its log
// is complete (inspect.LogComplete: batches are projected in any order,
// so one can land after playbook.finished) and the list has not grown for
// a.settle. A log that stays incomplete is given up once it has not grown
// for SettleIncomplete settles.
func (a *app) followEvents(id string, filter eventFilter) error {
	// Status and events are polled apart: each must answer within the
	// give-up window.
	sp, ep := a.newPoller(), a.newPoller()
	// An unknown id is reported at once (the events api would answer an
	// empty list forever).
	for {
		st, err := a.exists(sp, id)
		if err != nil {
			return err
		}
		if st != nil {
			break
		}
		time.Sleep(a.interval)
	}
	printed := map[string]bool{}
	asJSON := a.jsonOut()
	var endedAt, grewAt time.Time
	var ended *inspect.Status
	lastLen := -1
	for {
		evs, _, err := a.fetchEvents(ep, id)
		if err != nil {
			return err
		}
		if evs != nil {
			for i, e := range evs.events {
				key := e.EventID
				if key == "" {
					key = string(evs.raw[i])
				}
				if printed[key] {
					continue
				}
				printed[key] = true
				if !filter.keep(e) {
					continue
				}
				if asJSON {
					fmt.Fprintln(a.stdout, strings.TrimSpace(string(compact(evs.raw[i]))))
				} else {
					fmt.Fprintln(a.stdout, eventLine(e))
				}
			}
			if len(printed) != lastLen {
				lastLen, grewAt = len(printed), time.Now()
			}
		}
		if endedAt.IsZero() {
			st, err := a.exists(sp, id)
			if err != nil {
				return err
			}
			if st != nil && terminal(string(st.Status)) {
				endedAt, ended = time.Now(), st
			}
		}
		if !endedAt.IsZero() && evs != nil && time.Since(grewAt) >= a.settle && time.Since(endedAt) >= a.settle &&
			(inspect.LogComplete(ended, evs.events) || time.Since(grewAt) >= SettleIncomplete*a.settle) {
			return nil
		}
		time.Sleep(a.interval)
	}
}

// compact removes insignificant space from a JSON value.
func compact(b []byte) []byte {
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return b
	}
	out, _ := json.Marshal(m)
	return out
}

func (a *app) cancelCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:               "cancel ID",
		ValidArgsFunction: a.completeExecutionIDs,
		Short:             "Cancel a running execution",
		Long: `Cancel an execution (POST /executions/{id}/cancel): its status becomes canceled at
once, nothing new is dispatched, pending units are dropped and running ones stop at
their next checkpoint; child executions are canceled too. --reason is recorded in the
cancellation event (playbook.cancel.requested; default "requested through the API").
Exit 3 for an unknown id, 2 when the execution has already ended (409).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var body any
			if reason != "" {
				body = map[string]string{"reason": reason}
			}
			return a.postStatus("/executions/"+url.PathEscape(id)+"/cancel", body, "execution "+id, "canceled")
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the cancellation event")
	return c
}

func (a *app) costCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "cost ID",
		ValidArgsFunction: a.completeExecutionIDs,
		Short:             "Print the cloud operations an execution used and their price",
		Long: `Print the cloud operations an execution's functions counted (Pub/Sub, Firestore,
Cloud Tasks, function invocations and time), by service and kind, with their price
at GCP list prices, the total in USD and the price per 1,000 steps (step runs plus
loop iterations), from GET /executions/{id}/cost. --json (or --output json) prints
the api's object: {execution_id, steps, operations: {service: {kind: count}}, lines,
usd_total, usd_per_1000_steps, price_source, price_date}. Exit 3 for an unknown id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var v inspect.Cost
			raw, err := a.getJSON("/executions/"+url.PathEscape(id)+"/cost", "execution "+id, &v)
			if err != nil {
				return err
			}
			if asJSON || a.jsonOut() {
				printJSON(a.stdout, raw)
				return nil
			}
			fmt.Fprintf(a.stdout, "execution %s: %d steps\n\n", id, v.Steps)
			t := newTable(a.stdout, "SERVICE", "KIND", "COUNT", "USD")
			for _, l := range v.SortedLines() {
				t.row(l.Service, l.Kind, strconv.FormatFloat(l.Count, 'f', -1, 64), fmt.Sprintf("%.8f", l.USD))
			}
			t.row("total", "", "", fmt.Sprintf("%.8f", v.USDTotal))
			t.flush()
			if v.Steps > 0 {
				fmt.Fprintf(a.stdout, "\nUSD per 1,000 steps: %.6f\n", v.USDPer1000Steps)
			}
			if v.PriceSource != "" {
				fmt.Fprintf(a.stdout, "prices: %s (%s)\n", v.PriceSource, v.PriceDate)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the api's JSON object (same as --output json)")
	return c
}
