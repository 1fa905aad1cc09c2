package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/jsonx"
)

func (a *app) validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|DIR...",
		Short: "Validate playbooks (every problem with its YAML line)",
		Long: `Validate playbooks (and kind: Subscription resources) against the DSL: for each
FILE, "FILE: ok (N steps)" (a subscription: "FILE: ok (subscription NAME: ...)") on stdout,
or every problem as "FILE:LINE: path: message" on stderr; warnings go to stderr.
A DIR stands for every *.yaml and *.yml file under it (recursively, in lexical
order); when a DIR is given, the last line on stdout counts the files:
"N of M files valid".
Needs no api. Exit 0 when every file is valid, 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.eachFile(files, func(f string, s *dsl.Subscription) {
				a.subscriptionWarnings(f, s)
				src := s.PubSubSubscription
				if s.Source == "kafka" {
					src = s.SourceKey("")
				}
				fmt.Fprintf(a.stdout, "%s: ok (subscription %s: %s → %s)\n", f, s.Metadata.Name, src, s.Dispatch.Playbook)
			}, func(f string, pb *dsl.Playbook) {
				for _, w := range pb.Warnings {
					fmt.Fprintf(a.stderr, "%s:%d: warning: %s: %s\n", f, w.Line, w.Path, w.Message)
				}
				fmt.Fprintf(a.stdout, "%s: ok (%d steps)\n", f, len(pb.Workflow))
			})
		},
	}
}

func (a *app) lintCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "lint FILE|DIR...",
		Short: "Validate, then analyse the workflow as a Petri net",
		Long: `Validate each FILE, then analyse its workflow as a Petri net: unreachable steps,
no path to a terminal step, unguarded arc cycles, jump cycles without break or a
bounded attempt, dead arcs, ... Each finding is printed on stdout as
"FILE:LINE: severity: path: message [code]", then "FILE: N finding(s)".
A DIR stands for every *.yaml and *.yml file under it (recursively).
Needs no api. Exit 2 when a file does not validate, 0 when there are only warnings.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.eachFile(files, func(f string, s *dsl.Subscription) {
				for _, w := range s.Warnings {
					fmt.Fprintf(a.stdout, "%s:%d: warning: %s: %s [subscription]\n", f, w.Line, w.Path, w.Message)
				}
				fmt.Fprintf(a.stdout, "%s: %d finding(s)\n", f, len(s.Warnings))
			}, func(f string, pb *dsl.Playbook) {
				findings := dsl.Lint(pb)
				for _, p := range findings {
					sev := p.Severity
					if sev == "" {
						sev = "warning"
					}
					fmt.Fprintf(a.stdout, "%s:%d: %s: %s: %s [%s]\n", f, p.Line, sev, p.Path, p.Message, p.Code)
				}
				fmt.Fprintf(a.stdout, "%s: %d finding(s)\n", f, len(findings))
			})
		},
	}
}

// eachFile loads each of files as a kind: Subscription resource (for sub)
// or a playbook (for play) for validate and lint; a file that does not
// load has its problems printed on stderr, the others are still done, and
// the error is then ExitInvalid.
func (a *app) eachFile(args []string, sub func(file string, s *dsl.Subscription), play func(file string, pb *dsl.Playbook)) error {
	files, dirs, err := expandFiles(args)
	if err != nil {
		fmt.Fprintln(a.stderr, err)
		return &exitError{code: ExitInvalid}
	}
	bad := false
	valid := 0
	defer func() {
		if dirs {
			fmt.Fprintf(a.stdout, "%d of %d files valid\n", valid, len(files))
		}
	}()
	for _, f := range files {
		if src, err := os.ReadFile(f); err == nil && dsl.ResourceKind(src) == "Subscription" {
			s, err := dsl.LoadSubscription(src, f)
			if err != nil {
				fmt.Fprintln(a.stderr, err)
				bad = true
				continue
			}
			sub(f, s)
			valid++
			continue
		}
		pb, err := dsl.LoadFile(f)
		if err != nil {
			fmt.Fprintln(a.stderr, err)
			bad = true
			continue
		}
		play(f, pb)
		valid++
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
		workload string
		timeout  time.Duration
		quiet    bool
	)
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Start an execution of a playbook file and wait for its end",
		Long: `Validate FILE, start an execution of it through the api (POST /executions with the
playbook inline), show each step's progress on stderr (status, run, loop counts, as
they change) and print one JSON line on stdout whatever --output says:

  {"execution_id", "status", "duration_ms", "steps": {step: result}, "failures"?}

--workload is a JSON object deep-merged over the playbook's workload. The script
files the playbook reads (script: blocks of type file with a literal path) are sent
with it: each is resolved against FILE's own directory, whatever the working
directory, and must stay inside it (a UTF-8 file of at most 4 MiB; the api checks
each sha256). An unknown
execution id (404) stops at once (exit 3); an api that stops answering for 30 s
stops with exit 4.

Exit 0 iff the status is ok, 1 if it failed or was canceled or --timeout passed,
2 on invalid input (the playbook, --workload, or a 400 from the api).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPlaybook(args[0], workload, timeout, quiet)
		},
	}
	c.Flags().StringVar(&workload, "workload", "", "JSON object deep-merged over the playbook's workload")
	c.Flags().DurationVar(&timeout, "timeout", 60*time.Minute, "give up waiting after this long (exit 1)")
	c.Flags().BoolVar(&quiet, "quiet", false, "no progress output on stderr")
	return c
}

func (a *app) runPlaybook(file, workload string, timeout time.Duration, quiet bool) error {
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
	var wl map[string]any
	if workload != "" {
		if err := jsonx.Unmarshal([]byte(workload), &wl); err != nil {
			return fail(ExitInvalid, "--workload is not a JSON object: %v", err)
		}
	}
	body := map[string]any{"playbook": string(src), "workload": wl}
	files, err := playbookFiles(file, pb)
	if err != nil {
		return fail(ExitInvalid, "%v", err)
	}
	if len(files) > 0 {
		body["files"] = files
	}
	r, err := a.send(http.MethodPost, "/executions", body)
	if err != nil {
		return err
	}
	if r.status == http.StatusBadRequest {
		return fail(ExitInvalid, "rejected: %s", r.body)
	}
	if err := a.check(http.MethodPost, "/executions", r, "execution"); err != nil {
		return err
	}
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := json.Unmarshal(r.body, &started); err != nil || started.ExecutionID == "" {
		return fail(ExitUnavailable, "api at %s: POST /executions answered %d without an execution_id: %s", a.base(), r.status, r.body)
	}
	id := started.ExecutionID
	if !quiet {
		fmt.Fprintf(a.stderr, "execution %s started (%s)\n", id, file)
	}
	deadline := time.Now().Add(timeout)
	last := map[string]string{}
	p := a.newPoller()
	for {
		b, err := p.get("/executions/"+id, "execution "+id)
		if err != nil {
			return err
		}
		if b != nil {
			var st map[string]any
			if err := jsonx.Unmarshal(b, &st); err != nil {
				return fail(ExitUnavailable, "api at %s: status of %s is not JSON: %v", a.base(), id, err)
			}
			if !quiet {
				a.progress(st, last)
			}
			status, _ := st["status"].(string)
			if terminal(status) {
				out := map[string]any{"execution_id": id, "status": status, "duration_ms": st["duration_ms"], "steps": st["results"]}
				if f, ok := st["failures"]; ok && f != nil {
					out["failures"] = f
				}
				ob, _ := json.Marshal(out)
				fmt.Fprintln(a.stdout, string(ob))
				if status == "ok" {
					return nil
				}
				return &exitError{code: ExitFailed}
			}
		}
		if time.Now().After(deadline) {
			return fail(ExitFailed, "execution %s still running after %s", id, timeout)
		}
		time.Sleep(a.interval)
	}
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
