package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
)

// DefaultTraceDir is where the local stack's file exporter writes spans
// when NOETL_TRACE_DIR is unset (relative to the working directory;
// scripts/noetl sets NOETL_TRACE_DIR to the stack's absolute path).
const DefaultTraceDir = ".stack/traces"

func (a *app) traceCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "trace ID",
		Short: "Print an execution's span tree from the local trace files",
		Long: `Print the span tree of an execution (root span, server.dispatch per unit,
worker.plugin.<kind> per attempt, server.route per arc decision, with their NoETL observability spec
§8.3 attributes) read from the *.jsonl files of the file exporter (the local stack's
trace collector) in --dir, default $NOETL_TRACE_DIR, else ` + DefaultTraceDir + `.
json prints the tree as {execution_id, trace_ids, spans, roots: [{span, children}]}.
Needs no api. Spans are exported in batches: right after an execution ends, wait a
few seconds. Exit 3 when the directory holds no span of the execution, 2 when it
cannot be read.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := dir
			if d == "" {
				d = a.env("NOETL_TRACE_DIR")
			}
			if d == "" {
				d = DefaultTraceDir
			}
			tree, _, err := tracetree.Load(d, args[0])
			if errors.Is(err, tracetree.ErrNoSpans) {
				return fail(ExitNotFound, "%v (is tracing on? the file exporter writes to NOETL_TRACE_DIR)", err)
			}
			if err != nil {
				return fail(ExitInvalid, "%v (set --dir or NOETL_TRACE_DIR to the directory the functions' file exporter writes, e.g. the stack's .stack/traces; is the file exporter on?)", err)
			}
			if a.jsonOut() {
				printValue(a.stdout, tree)
				return nil
			}
			return tree.Print(a.stdout)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "directory of the span files (default $NOETL_TRACE_DIR, else "+DefaultTraceDir+")")
	return c
}
