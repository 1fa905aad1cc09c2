// Command noetl is the engine's command-line client.
//
//	noetl validate FILE...            validate playbooks; exit 2 on errors (every problem with its line)
//	noetl lint FILE...                validate, then static analysis of the workflow as a Petri net
//	                                  (unreachable steps, no path to a terminal step, unguarded arc
//	                                  cycles, jump cycles without break/bounded attempt, ...);
//	                                  exit 2 on errors, 0 when there are only warnings
//	noetl run FILE [--workload JSON]  start an execution through the api function, show progress,
//	                                  print one JSON line {"execution_id","status","duration_ms","steps"};
//	                                  exit 0 iff status ok, 1 if it failed, 2 on invalid input
//	noetl status ID                   print an execution's status document
//	noetl events ID                   print an execution's events
//
// The api URL is $NOETL_API_URL, else $NOETL_FUNCTIONS_URL/api, else
// http://127.0.0.1:8680/api.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/jsonx"
)

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  noetl validate FILE...
  noetl lint FILE...
  noetl run FILE [--workload JSON] [--timeout DURATION] [--quiet]
  noetl status EXECUTION_ID
  noetl events EXECUTION_ID`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	// Every api call carries the caller's token (NOETL_API_TOKEN, from
	// .stack/env on the local stack): the api refuses anonymous calls.
	http.DefaultClient.Transport = bearer{base: http.DefaultTransport, token: os.Getenv("NOETL_API_TOKEN")}
	switch os.Args[1] {
	case "validate":
		os.Exit(validate(os.Args[2:]))
	case "lint":
		os.Exit(lint(os.Args[2:]))
	case "run":
		os.Exit(run(os.Args[2:]))
	case "status":
		os.Exit(show(os.Args[2:], ""))
	case "events":
		os.Exit(show(os.Args[2:], "/events"))
	default:
		usage()
	}
}

// bearer adds "Authorization: Bearer <token>" to every request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" || r.Header.Get("Authorization") != "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func apiURL() string {
	if u := os.Getenv("NOETL_API_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	if u := os.Getenv("NOETL_FUNCTIONS_URL"); u != "" {
		return strings.TrimSuffix(u, "/") + "/api"
	}
	return "http://127.0.0.1:8680/api"
}

func validate(files []string) int {
	if len(files) == 0 {
		usage()
	}
	code := 0
	for _, f := range files {
		pb, err := dsl.LoadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 2
			continue
		}
		for _, w := range pb.Warnings {
			fmt.Fprintf(os.Stderr, "%s:%d: warning: %s: %s\n", f, w.Line, w.Path, w.Message)
		}
		fmt.Printf("%s: ok (%d steps)\n", f, len(pb.Workflow))
	}
	return code
}

func lint(files []string) int {
	if len(files) == 0 {
		usage()
	}
	code := 0
	for _, f := range files {
		pb, err := dsl.LoadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 2
			continue
		}
		findings := dsl.Lint(pb)
		for _, p := range findings {
			sev := p.Severity
			if sev == "" {
				sev = "warning"
			}
			fmt.Printf("%s:%d: %s: %s: %s [%s]\n", f, p.Line, sev, p.Path, p.Message, p.Code)
		}
		fmt.Printf("%s: %d finding(s)\n", f, len(findings))
	}
	return code
}

// reorder lets flags follow the positional argument.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && a != "--quiet" && a != "-quiet" && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func run(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	workload := fs.String("workload", "", "JSON object deep-merged over the playbook's workload")
	timeout := fs.Duration("timeout", 60*time.Minute, "give up waiting after this long")
	quiet := fs.Bool("quiet", false, "no progress output")
	if err := fs.Parse(reorder(args)); err != nil || fs.NArg() != 1 {
		usage()
	}
	file := fs.Arg(0)
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "noetl:", err)
		return 2
	}
	pb, err := dsl.Load(src, file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, w := range pb.Warnings {
		fmt.Fprintf(os.Stderr, "%s:%d: warning: %s: %s\n", file, w.Line, w.Path, w.Message)
	}
	var wl map[string]any
	if *workload != "" {
		if err := jsonx.Unmarshal([]byte(*workload), &wl); err != nil {
			fmt.Fprintln(os.Stderr, "noetl: --workload is not a JSON object:", err)
			return 2
		}
	}
	body, _ := json.Marshal(map[string]any{"playbook": string(src), "workload": wl})
	resp, err := http.Post(apiURL()+"/executions", "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, "noetl: api unreachable (is the stack up? scripts/up):", err)
		return 1
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		fmt.Fprintln(os.Stderr, "noetl: rejected:", string(rb))
		return 2
	}
	if resp.StatusCode != http.StatusAccepted {
		fmt.Fprintf(os.Stderr, "noetl: api answered %d: %s\n", resp.StatusCode, rb)
		return 1
	}
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	_ = json.Unmarshal(rb, &started)
	id := started.ExecutionID
	if !*quiet {
		fmt.Fprintf(os.Stderr, "execution %s started (%s)\n", id, file)
	}
	deadline := time.Now().Add(*timeout)
	last := map[string]string{}
	for {
		st, err := getStatus(id)
		if err == nil {
			if !*quiet {
				progress(st, last)
			}
			status, _ := st["status"].(string)
			if status == "ok" || status == "failed" || status == "cancelled" {
				out := map[string]any{"execution_id": id, "status": status, "duration_ms": st["duration_ms"], "steps": st["results"]}
				if f, ok := st["failures"]; ok && f != nil {
					out["failures"] = f
				}
				b, _ := json.Marshal(out)
				fmt.Println(string(b))
				if status == "ok" {
					return 0
				}
				return 1
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "noetl: execution %s still running after %s\n", id, *timeout)
			return 1
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func getStatus(id string) (map[string]any, error) {
	resp, err := http.Get(apiURL() + "/executions/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var m map[string]any
	if err := jsonx.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// progress prints one line per step whose status or loop count changed.
func progress(st map[string]any, last map[string]string) {
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
			fmt.Fprintf(os.Stderr, "  %-28s %s\n", n, line)
		}
	}
}

func show(args []string, suffix string) int {
	if len(args) != 1 {
		usage()
	}
	resp, err := http.Get(apiURL() + "/executions/" + args[0] + suffix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "noetl:", err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	if resp.StatusCode != 200 {
		return 1
	}
	return 0
}
