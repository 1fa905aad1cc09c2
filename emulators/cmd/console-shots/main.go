// Command console-shots writes screenshots (PNG) of the console's
// execution page for the demo (examples/countries_etl.yaml) and for a
// failed execution, and prints their paths (scripts/console-shots runs
// it on the local stack). It reuses the newest ok demo execution and the
// newest execution of its own failing playbook, or runs them.
//
//	console-shots [--out DIR] [--width 1400] [--demo ID] [--failed ID] [--rerun]
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/noetl/gcpengine/emulators/browser"
)

// failingPlaybook is the failed execution's playbook (failure.yaml): a
// parallel loop in which some iterations fail after retries (best
// effort), then a step that fails the execution because more items failed
// than workload.max_failed allows (0). A rerun from the failed step with
// {"max_failed": 2} completes it (emulators/e2e rerun_test.go, docs
// "Rerun").
//
//go:embed failure.yaml
var failingPlaybook string

func main() {
	out := flag.String("out", "", "directory of the screenshots (default $NOETL_STACK_DIR/shots, else .stack/shots)")
	width := flag.Int("width", 1400, "browser window width in pixels")
	demo := flag.String("demo", "", "execution id of the demo to shoot (default: the newest ok countries_etl, else run one)")
	failed := flag.String("failed", "", "execution id of the failed execution to shoot (default: the newest of its playbook, else run one)")
	rerun := flag.Bool("rerun", false, "run the demo and the failing playbook again instead of reusing executions")
	flag.Parse()
	if err := run(*out, *width, *demo, *failed, *rerun); err != nil {
		fmt.Fprintln(os.Stderr, "console-shots:", err)
		os.Exit(1)
	}
}

func run(out string, width int, demo, failed string, rerun bool) error {
	fn, tok := os.Getenv("NOETL_FUNCTIONS_URL"), os.Getenv("NOETL_API_TOKEN")
	if fn == "" || tok == "" {
		return errors.New("NOETL_FUNCTIONS_URL and NOETL_API_TOKEN are unset: source .stack/env (scripts/console-shots does)")
	}
	if out == "" {
		out = filepath.Join(os.Getenv("NOETL_STACK_DIR"), "shots")
		if os.Getenv("NOETL_STACK_DIR") == "" {
			out = filepath.Join(".stack", "shots")
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	c := &client{base: fn + "/api", token: tok}
	var err error
	if demo == "" {
		if demo, err = c.find("examples/countries_etl", "ok", rerun); err != nil {
			return err
		}
		if demo == "" {
			fmt.Fprintln(os.Stderr, "running examples/countries_etl.yaml (the demo)")
			if demo, err = c.start(map[string]any{"path": "examples/countries_etl.yaml", "workload": map[string]any{
				"api_url": os.Getenv("NOETL_FIXTURES_URL"), "pg_dsn": os.Getenv("NOETL_PG_DSN")}}); err != nil {
				return err
			}
		}
	}
	if failed == "" {
		if failed, err = c.find("tests/console_shots_failure", "failed", rerun); err != nil {
			return err
		}
		if failed == "" {
			fmt.Fprintln(os.Stderr, "running the failing playbook")
			if failed, err = c.start(map[string]any{"playbook": failingPlaybook}); err != nil {
				return err
			}
		}
	}
	for _, id := range []string{demo, failed} {
		if err := c.wait(id, 15*time.Minute); err != nil {
			return err
		}
	}
	b, err := browser.Start(width, 1000)
	if err != nil {
		return err
	}
	defer b.Close()
	console := fn + "/api/console"
	if err := b.Do(60*time.Second, browser.Login(console, tok)); err != nil {
		return fmt.Errorf("log in: %w", err)
	}
	for _, s := range []struct{ name, id string }{{"demo", demo}, {"failed", failed}} {
		path := filepath.Join(out, "console-"+s.name+".png")
		if err := b.Do(2*time.Minute,
			chromedp.Navigate(console+"/executions/"+url.PathEscape(s.id)),
			chromedp.WaitVisible(chromedp.CSS("#timeline svg")),
		); err != nil {
			return fmt.Errorf("%s page: %w", s.name, err)
		}
		png, err := browser.Run(b, time.Minute, chromedp.FullScreenshot(100))
		if err != nil {
			return fmt.Errorf("%s page: screenshot: %w", s.name, err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return err
		}
		abs, _ := filepath.Abs(path)
		fmt.Printf("%s execution %s: %s\n", s.name, s.id, abs)
	}
	return nil
}

// client is a minimal api client.
type client struct{ base, token string }

func (c *client) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// find returns the newest execution of playbook with status ("" when
// there is none, or rerun).
func (c *client) find(playbook, status string, rerun bool) (string, error) {
	if rerun {
		return "", nil
	}
	var body struct {
		Executions []struct {
			ExecutionID string `json:"execution_id"`
		} `json:"executions"`
	}
	q := url.Values{"playbook": {playbook}, "status": {status}, "limit": {"1"}}
	if err := c.do(http.MethodGet, "/executions?"+q.Encode(), nil, &body); err != nil {
		return "", err
	}
	if len(body.Executions) == 0 {
		return "", nil
	}
	return body.Executions[0].ExecutionID, nil
}

// start starts an execution.
func (c *client) start(req map[string]any) (string, error) {
	var body struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := c.do(http.MethodPost, "/executions", req, &body); err != nil {
		return "", err
	}
	return body.ExecutionID, nil
}

// wait waits for an execution to end and its last events to be projected.
func (c *client) wait(id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var st struct {
			Status string `json:"status"`
		}
		if err := c.do(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
			return err
		}
		if st.Status == "ok" || st.Status == "failed" || st.Status == "canceled" {
			time.Sleep(2 * time.Second)
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("execution %s did not end within %s", id, timeout)
}
