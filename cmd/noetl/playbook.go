package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/dsl"
)

func (a *app) validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|DIR|-...",
		Short: "Validate playbooks (every problem with its YAML line)",
		Long: `Validate playbooks (and kind: Subscription resources) against the DSL: for each
FILE, "FILE: ok (N steps)" (a subscription: "FILE: ok (subscription NAME: ...)") on stdout,
or every problem as "FILE:LINE: path: message" on stderr; warnings go to stderr.
A DIR stands for every *.yaml and *.yml file under it (recursively, in lexical
order); when a DIR is given, the last line on stdout counts the files:
"N of M files valid". "-" reads one document from stdin (named <stdin>).

-o json prints one JSON object on stdout instead:
  {"files": [{"file", "kind": "playbook"|"subscription", "valid", "steps"?,
              "problems": [{"line", "path", "message"}], "warnings": [...]}],
   "valid": N, "total": M}
Needs no api. Exit 0 when every file is valid, 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.eachFile(cmd, files, func(r *fileReport, s *dsl.Subscription) {
				r.Warnings = s.Warnings
				if r.text {
					a.subscriptionWarnings(r.File, s)
					src := s.PubSubSubscription
					if s.Source == "kafka" {
						src = s.SourceKey("")
					}
					fmt.Fprintf(a.stdout, "%s: ok (subscription %s: %s → %s)\n", r.File, s.Metadata.Name, src, s.Dispatch.Playbook)
				}
			}, func(r *fileReport, pb *dsl.Playbook) {
				n := len(pb.Workflow)
				r.Steps, r.Warnings = &n, pb.Warnings
				if r.text {
					for _, w := range pb.Warnings {
						fmt.Fprintf(a.stderr, "%s:%d: warning: %s: %s\n", r.File, w.Line, w.Path, w.Message)
					}
					fmt.Fprintf(a.stdout, "%s: ok (%s)\n", r.File, plural(n, "step", "steps"))
				}
			})
		},
	}
}

func (a *app) lintCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "lint FILE|DIR|-...",
		Short: "Validate, then analyse the workflow as a Petri net",
		Long: `Validate each FILE, then analyse its workflow as a Petri net: unreachable steps,
no path to a terminal step, unguarded arc cycles, jump cycles without break or a
bounded attempt, dead arcs, ... Each finding is printed on stdout as
"FILE:LINE: severity: path: message [code]" (a deprecation warning has no code),
then "FILE: N finding(s)". A DIR stands for every *.yaml and *.yml file under it
(recursively); "-" reads one document from stdin (named <stdin>).

-o json prints one JSON object on stdout instead:
  {"files": [{"file", "kind", "valid", "problems": [...], "findings": [{"line",
   "path", "message", "severity", "code"?}]}], "valid": N, "total": M}
Needs no api. Exit 2 when a file does not validate, 0 when there are only warnings.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.eachFile(cmd, files, func(r *fileReport, s *dsl.Subscription) {
				r.Findings = s.Warnings
				if r.text {
					for _, w := range s.Warnings {
						fmt.Fprintf(a.stdout, "%s:%d: warning: %s: %s [subscription]\n", r.File, w.Line, w.Path, w.Message)
					}
					fmt.Fprintf(a.stdout, "%s: %d finding(s)\n", r.File, len(s.Warnings))
				}
			}, func(r *fileReport, pb *dsl.Playbook) {
				findings := dsl.Lint(pb)
				r.Findings = findings
				if !r.text {
					return
				}
				for _, p := range findings {
					sev := p.Severity
					if sev == "" {
						sev = "warning"
					}
					line := fmt.Sprintf("%s:%d: %s: %s: %s", r.File, p.Line, sev, p.Path, p.Message)
					if p.Code != "" {
						line += " [" + p.Code + "]"
					}
					fmt.Fprintln(a.stdout, line)
				}
				fmt.Fprintf(a.stdout, "%s: %d finding(s)\n", r.File, len(findings))
			})
		},
	}
}

// plural is "1 step" or "N steps".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fileReport is what validate and lint found in one file (their -o json
// output; text output is printed as it goes, text true).
type fileReport struct {
	File     string        `json:"file"`
	Kind     string        `json:"kind,omitempty"`
	Valid    bool          `json:"valid"`
	Steps    *int          `json:"steps,omitempty"`
	Problems []dsl.Problem `json:"problems,omitempty"`
	Warnings []dsl.Problem `json:"warnings,omitempty"`
	Findings []dsl.Problem `json:"findings,omitempty"`
	text     bool
}

// stdinName names the document validate and lint read from stdin ("-").
const stdinName = "<stdin>"

// eachFile loads each of args (files, directories, "-" for stdin) as a
// kind: Subscription resource (for sub) or a playbook (for play) for
// validate and lint; a file that does not load has its problems printed
// on stderr (text) or recorded (-o json, printed at the end), the others
// are still done, and the error is then ExitInvalid.
func (a *app) eachFile(cmd *cobra.Command, args []string, sub func(r *fileReport, s *dsl.Subscription), play func(r *fileReport, pb *dsl.Playbook)) error {
	asJSON := cmd.Flags().Changed("output") && a.jsonOut()
	files, dirs, err := expandFiles(args)
	if err != nil {
		fmt.Fprintln(a.stderr, err)
		return &exitError{code: ExitInvalid}
	}
	bad := false
	valid := 0
	var reports []*fileReport
	stdinRead := false
	for _, f := range files {
		r := &fileReport{File: f, text: !asJSON}
		reports = append(reports, r)
		var src []byte
		if f == "-" {
			r.File = stdinName
			if stdinRead {
				err = errors.New(`"-" (stdin) can be given once`)
			} else {
				src, err = io.ReadAll(a.stdin)
				stdinRead = true
			}
		} else {
			src, err = os.ReadFile(f)
		}
		if err != nil {
			err = fmt.Errorf("dsl: %w", err)
		} else if dsl.ResourceKind(src) == "Subscription" {
			r.Kind = "subscription"
			var s *dsl.Subscription
			if s, err = dsl.LoadSubscription(src, r.File); err == nil {
				r.Valid = true
				sub(r, s)
			}
		} else {
			r.Kind = "playbook"
			var pb *dsl.Playbook
			if pb, err = dsl.Load(src, r.File); err == nil {
				r.Valid = true
				play(r, pb)
			}
		}
		if err != nil {
			bad = true
			var ve *dsl.ValidationError
			if errors.As(err, &ve) {
				r.Problems, r.Warnings = ve.Problems, ve.Warnings
			} else {
				r.Problems = []dsl.Problem{{Message: err.Error()}}
			}
			if !asJSON {
				fmt.Fprintln(a.stderr, err)
			}
			continue
		}
		valid++
	}
	if asJSON {
		printValue(a.stdout, map[string]any{"files": reports, "valid": valid, "total": len(files)})
	} else if dirs {
		fmt.Fprintf(a.stdout, "%d of %d files valid\n", valid, len(files))
	}
	if bad {
		return &exitError{code: ExitInvalid}
	}
	return nil
}

// expandFiles replaces each directory of args by the *.yaml and *.yml
// files under it (recursively, lexical order); dirs reports that one was
// given. A directory without such files is an error.
func expandFiles(args []string) (files []string, dirs bool, err error) {
	for _, a := range args {
		if a == "-" {
			files = append(files, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			files = append(files, a) // a missing file is reported when read
			continue
		}
		dirs = true
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, dirs, fmt.Errorf("%s: %v", a, err)
		}
		if len(found) == 0 {
			return nil, dirs, fmt.Errorf("%s: no *.yaml or *.yml file under it", a)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, dirs, nil
}

// terminal reports whether an execution status is final.
func terminal(status string) bool {
	switch status {
	case "ok", "failed", "canceled", "cancelled":
		return true
	}
	return false
}

func (a *app) runCmd() *cobra.Command {
	var (
		workload, path string
		version        int
		timeout        time.Duration
		quiet, detach  bool
	)
	c := &cobra.Command{
		Use:   "run FILE | --path CATALOG_PATH",
		Short: "Start an execution of a playbook and wait for its end",
		Long: `Start an execution through the api (POST /executions): of FILE, validated here
first and sent inline, or with --path of the catalog's playbook at CATALOG_PATH (its
latest version, or --version N; see "catalog register"). Show each step's progress on stderr (status,
run, loop counts, as they change) and, once it has ended, print on stdout:

  - on a terminal (--output table): a summary: status and duration, one row per step
    (status, runs, task attempts and failed ones, duration, loop progress), the
    failures, the result of the step that finished last (a few lines) and the
    console's URL of the execution;
  - with --output json (the default when stdout is a pipe or a file): one JSON line
    {"execution_id", "status", "duration_ms", "steps": {step: result}, "failures"?}.

--detach prints the execution id (json: {"execution_id"}) as soon as the execution
is started and returns; "noetl wait ID" waits for it later.

--workload is a JSON object deep-merged over the playbook's workload (@FILE reads it
from a file, - from stdin). The script
files the playbook reads (script: blocks of type file with a literal path) are sent
with it: each is resolved against FILE's own directory, whatever the working
directory, and must stay inside it (a UTF-8 file of at most 4 MiB; the api checks
each sha256). An unknown
execution id (404) stops at once (exit 3); an api that stops answering for 30 s
stops with exit 4.

Exit 0 iff the status is ok (with --detach: once started), 1 if it failed or was
canceled or --timeout passed, 2 on invalid input (the playbook, --workload, or a 400
from the api, such as a --path the catalog does not hold).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && path != "":
				return fail(ExitInvalid, "give a playbook FILE or --path CATALOG_PATH, not both")
			case len(args) == 0 && path == "":
				return fail(ExitInvalid, "run needs a playbook FILE or --path CATALOG_PATH")
			}
			if version != 0 && path == "" {
				return fail(ExitInvalid, "--version needs --path")
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return a.runPlaybook(file, path, version, workload, timeout, quiet, detach)
		},
	}
	c.Flags().StringVar(&workload, "workload", "", "JSON object deep-merged over the playbook's workload, @FILE to read it from a file, or - from stdin")
	c.Flags().StringVar(&path, "path", "", "run the catalog's playbook at this path instead of a FILE")
	c.Flags().IntVar(&version, "version", 0, "with --path: the catalog version to run (default the latest)")
	c.Flags().DurationVar(&timeout, "timeout", 60*time.Minute, "give up waiting after this long (exit 1)")
	c.Flags().BoolVar(&quiet, "quiet", false, "no progress output on stderr")
	c.Flags().BoolVar(&detach, "detach", false, "print the execution id once started and return without waiting")
	return c
}

func (a *app) waitCmd() *cobra.Command {
	var (
		timeout time.Duration
		quiet   bool
	)
	c := &cobra.Command{
		Use:               "wait ID",
		ValidArgsFunction: a.completeExecutionIDs,
		Short:             "Wait for an execution to end and print its summary",
		Long: `Wait for an execution to end, showing each step's progress on stderr, then print
what "run" prints at the end: a summary on a terminal (--output table), one JSON line
{"execution_id", "status", "duration_ms", "steps", "failures"?} with --output json
(the default when stdout is a pipe or a file). An execution that has already ended
is printed at once. Exit 0 iff it ended ok, 1 if it failed or was canceled or
--timeout passed, 3 for an unknown id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.waitEnd(args[0], timeout, quiet, false)
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 60*time.Minute, "give up waiting after this long (exit 1)")
	c.Flags().BoolVar(&quiet, "quiet", false, "no progress output on stderr")
	return c
}

// runPlaybook starts an execution of file (validated here, sent inline)
// or of the catalog's playbook at path, then waits for its end (waitEnd)
// unless detach.
func (a *app) runPlaybook(file, path string, version int, workload string, timeout time.Duration, quiet, detach bool) error {
	req := map[string]any{}
	what := path
	if file != "" {
		src, err := os.ReadFile(file)
		if err != nil {
			return fail(ExitInvalid, "%v", err)
		}
		pb, err := dsl.Load(src, file)
		if err != nil {
			fmt.Fprintln(a.stderr, err)
			return &exitError{code: ExitInvalid}
		}
		for _, w := range pb.Warnings {
			fmt.Fprintf(a.stderr, "%s:%d: warning: %s: %s\n", file, w.Line, w.Path, w.Message)
		}
		req["playbook"], what = string(src), file
		files, err := playbookFiles(file, pb)
		if err != nil {
			return fail(ExitInvalid, "%v", err)
		}
		if len(files) > 0 {
			req["files"] = files
		}
	} else {
		req["path"] = path
		if version > 0 {
			req["version"] = version
		}
	}
	if workload != "" {
		wl, err := a.readWorkload(workload)
		if err != nil {
			return err
		}
		req["workload"] = wl
	} else if file != "" {
		req["workload"] = nil
	}
	r, err := a.send(http.MethodPost, "/executions", req)
	if err != nil {
		return err
	}
	if r.status == http.StatusBadRequest {
		return fail(ExitInvalid, "rejected: %s", r.body)
	}
	if err := a.check(http.MethodPost, "/executions", r, "playbook "+what); err != nil {
		return err
	}
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := json.Unmarshal(r.body, &started); err != nil || started.ExecutionID == "" {
		return fail(ExitUnavailable, "api at %s: POST /executions answered %d without an execution_id: %s", a.base(), r.status, r.body)
	}
	id := started.ExecutionID
	if detach {
		if a.jsonOut() {
			ob, _ := json.Marshal(map[string]string{"execution_id": id})
			fmt.Fprintln(a.stdout, string(ob))
		} else {
			fmt.Fprintln(a.stdout, id)
		}
		if !quiet {
			fmt.Fprintf(a.stderr, "execution %s started (%s); wait for it: scripts/noetl wait %s\n", id, what, id)
		}
		return nil
	}
	if !quiet {
		fmt.Fprintf(a.stderr, "execution %s started (%s)\n", id, what)
	}
	return a.waitEnd(id, timeout, quiet, true)
}

// progress prints one line per step whose status, run or loop count
// changed since the last call.
func (a *app) progress(st map[string]any, last map[string]string) {
	steps, _ := st["steps"].(map[string]any)
	names := make([]string, 0, len(steps))
	for n := range steps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, _ := steps[n].(map[string]any)
		line := fmt.Sprintf("%v", s["status"])
		if r, _ := s["run"].(int64); r > 1 {
			line += fmt.Sprintf(" (run %d)", r)
		}
		if l, ok := s["loop"].(map[string]any); ok {
			line += fmt.Sprintf(" loop %v/%v", l["done"], l["total"])
		}
		if last[n] != line {
			last[n] = line
			fmt.Fprintf(a.stderr, "  %-28s %s\n", n, line)
		}
	}
}
