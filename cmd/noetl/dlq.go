package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// dlqStatuses are the statuses of a DLQ entry (NoETL observability spec §8.6).
var dlqStatuses = []string{"pending", "replayed", "discarded", "done"}

// dlqFields are the NoETL observability spec §8.6 fields of a DLQ entry, in display order.
var dlqFields = []string{"id", "message_id", "status", "execution_id", "step_id", "loop_index", "loop_key", "tool_kind", "sink_id",
	"attempts", "first_seen", "last_seen", "last_error"}

// entryID is the id of a DLQ entry as GET /dlq/{id} takes it.
func entryID(e map[string]any) string {
	if id := str(e["id"]); id != "" {
		return id
	}
	return str(e["message_id"])
}

func (a *app) dlqCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:   "dlq",
		Short: "Work the dead-letter queue: list, show, replay, discard",
		Long: `Work the dead-letter queue (NoETL observability spec §8.6): units that exhausted their attempts,
non-retryable errors and poison messages, each with message_id, execution_id,
step_id, loop_index, tool_kind, attempts, last_error, first_seen, last_seen, the
redacted payload, a context excerpt and a status (pending, replayed, discarded).`,
	}, a.dlqListCmd(), a.dlqShowCmd(), a.dlqReplayCmd(), a.dlqDiscardCmd())
}

func (a *app) dlqListCmd() *cobra.Command {
	var (
		status, execution, kind string
		limit                   int
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List DLQ entries",
		Long: `List DLQ entries (GET /dlq): id, status, execution, step, iteration, tool kind,
attempts, last seen, last error, newest first; --status, --execution and --kind
narrow the list. json prints {"entries": [...]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := listQuery(status, dlqStatuses, limit)
			if err != nil {
				return err
			}
			if execution != "" {
				q.Set("execution_id", execution)
			}
			if kind != "" {
				q.Set("tool_kind", kind)
			}
			var body struct {
				Entries []map[string]any `json:"entries"`
			}
			header := []string{"ID", "STATUS", "EXECUTION", "STEP", "ITERATION", "KIND", "ATTEMPTS", "LAST_SEEN", "LAST_ERROR"}
			return a.showList("/dlq?"+q.Encode(), "dlq", &body, header, func(t *table) int {
				for _, e := range body.Entries {
					t.row(entryID(e), str(e["status"]), str(e["execution_id"]), str(e["step_id"]), str(e["loop_index"]),
						str(e["tool_kind"]), str(e["attempts"]), fmtTimeText(str(e["last_seen"])), oneLine(str(e["last_error"]), 80))
				}
				return len(body.Entries)
			}, "no DLQ entries match")
		},
	}
	c.Flags().StringVar(&status, "status", "", "only entries with this status ("+strings.Join(dlqStatuses, "|")+")")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many entries")
	c.Flags().StringVar(&execution, "execution", "", "only entries of this execution")
	c.Flags().StringVar(&kind, "kind", "", "only entries of this tool kind (http, postgres, python, ...)")
	return c
}

func (a *app) dlqShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one DLQ entry",
		Long: `Show one DLQ entry (GET /dlq/{id}): every field, the redacted payload (indented
JSON) and the context excerpt. Exit 3 for an unknown id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var e map[string]any
			return a.show("/dlq/"+url.PathEscape(id), "DLQ entry "+id, &e, func() { a.dlqEntryTable(e) })
		},
	}
}

// dlqEntryTable prints a DLQ entry: its fields (NoETL observability spec §8.6 ones first),
// then the payload and context excerpt as indented JSON.
func (a *app) dlqEntryTable(e map[string]any) {
	t := newTable(a.stdout, "id", entryID(e))
	shown := map[string]bool{"id": true, "payload": true, "context_excerpt": true, "spec": true, "last_stack": true}
	for _, k := range dlqFields[1:] {
		shown[k] = true
		if _, ok := e[k]; ok {
			t.row(k, str(e[k]))
		}
	}
	var rest []string
	for k := range e {
		if !shown[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		t.row(k, str(e[k]))
	}
	t.flush()
	for _, k := range []string{"spec", "last_stack", "payload", "context_excerpt"} {
		v, ok := e[k]
		if !ok || v == nil || v == "" {
			continue
		}
		fmt.Fprintf(a.stdout, "\n%s:\n", k)
		s := str(v)
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(s), "  ", "  ") == nil {
			s = buf.String()
		}
		fmt.Fprintln(a.stdout, "  "+s)
	}
}

func (a *app) dlqReplayCmd() *cobra.Command {
	var patches []string
	c := &cobra.Command{
		Use:   "replay ID",
		Short: "Re-enqueue a DLQ entry's unit (idempotently)",
		Long: `Re-enqueue the unit of a DLQ entry (POST /dlq/{id}/replay) and mark the entry
replayed; a replayed unit that succeeds lets its execution go on. The api replays
idempotently. --patch key=value (repeatable) is a correction the api applies to the
unit before the replay: spec.<key> corrects the failed task's rendered configuration
(its "spec" in dlq show), checked against the kind's spec, e.g.
--patch spec.url=https://new.example.com; args.<key>, item.<key>, iter.<key>, ...
correct the unit's inputs. Values are JSON or, when they do not parse, strings
({"patch": {"key": "value"}}). Exit 3 for an unknown id, 2 for a bad patch.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			patch := map[string]string{}
			for _, p := range patches {
				k, v, ok := strings.Cut(p, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return fail(ExitInvalid, "--patch %q: want key=value", p)
				}
				patch[strings.TrimSpace(k)] = v
			}
			return a.postStatus("/dlq/"+url.PathEscape(id)+"/replay", map[string]any{"patch": patch}, "DLQ entry "+id, "replayed")
		},
	}
	c.Flags().StringArrayVar(&patches, "patch", nil, "key=value correction applied to the unit before the replay (repeatable)")
	return c
}

func (a *app) dlqDiscardCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "discard ID --reason TEXT",
		Short: "Discard a DLQ entry, with a reason",
		Long: `Mark a DLQ entry discarded (POST /dlq/{id}/discard {"reason"}): it is not replayed
and stays for the record until it expires. --reason is required. Exit 3 for an
unknown id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if strings.TrimSpace(reason) == "" {
				return fail(ExitInvalid, "dlq discard needs --reason TEXT (why the entry is dropped)")
			}
			return a.postStatus("/dlq/"+url.PathEscape(id)+"/discard", map[string]any{"reason": reason}, "DLQ entry "+id, "discarded")
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why the entry is discarded (required)")
	return c
}
