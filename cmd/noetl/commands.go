package main

// The shapes the operator commands share: a group that only holds
// subcommands, a GET printed as the api's JSON or as a table, a POST whose
// answer is printed the same way, and "delete NAME".

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// groupCmd completes c as a command that only holds subs: it takes no
// argument and, run bare, prints its usage on stderr (ExitInvalid).
func (a *app) groupCmd(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.Args = cobra.NoArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		fmt.Fprint(a.stderr, cmd.UsageString())
		return &exitError{code: ExitInvalid}
	}
	c.AddCommand(subs...)
	return c
}

// show GETs path (what names it in errors) into v: --output json prints
// the api's body as received, table output is text's.
func (a *app) show(path, what string, v any, text func()) error {
	raw, err := a.getJSON(path, what, v)
	if err != nil {
		return err
	}
	if a.jsonOut() {
		printJSON(a.stdout, raw)
		return nil
	}
	text()
	return nil
}

// showList is show for a list route: a table under header whose rows fill
// writes (returning how many items there were); none prints empty on
// stderr.
func (a *app) showList(path, what string, body any, header []string, fill func(*table) int, empty string) error {
	return a.show(path, what, body, func() {
		t := newTable(a.stdout, header...)
		n := fill(t)
		t.flush()
		if n == 0 {
			fmt.Fprintln(a.stderr, empty)
		}
	})
}

// post POSTs body to path, decodes the 2xx answer into v (best effort)
// and prints it: --output json as received, else through text.
func (a *app) post(path string, body any, what string, v any, text func()) error {
	b, err := a.call(http.MethodPost, path, body, what)
	if err != nil {
		return err
	}
	_ = json.Unmarshal(b, v)
	if a.jsonOut() {
		printJSON(a.stdout, b)
		return nil
	}
	text()
	return nil
}

// postStatus is post for an api answering {"status"}: the text is
// "<what>: <status>" (def when the answer names none).
func (a *app) postStatus(path string, body any, what, def string) error {
	var r struct {
		Status string `json:"status"`
	}
	return a.post(path, body, what, &r, func() {
		if r.Status == "" {
			r.Status = def
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", what, r.Status)
	})
}

// printSource prints "---", then src ending in a newline (the source
// under a show table).
func (a *app) printSource(src string) {
	fmt.Fprintln(a.stdout, "---")
	fmt.Fprint(a.stdout, src)
	if !strings.HasSuffix(src, "\n") {
		fmt.Fprintln(a.stdout)
	}
}

// deleteCmd builds "delete NAME": DELETE route/{name} (noun names it in
// errors: "<noun> NAME"); --output json prints asJSON(name), table
// output "<noun> NAME deleted<note>".
func (a *app) deleteCmd(short, long, route, noun, note string, asJSON func(name string)) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if _, err := a.call(http.MethodDelete, route+"/"+url.PathEscape(name), nil, noun+" "+name); err != nil {
				return err
			}
			if a.jsonOut() {
				asJSON(name)
				return nil
			}
			fmt.Fprintf(a.stdout, "%s %s deleted%s\n", noun, name, note)
			return nil
		},
	}
}

// listQuery checks a list command's --status (unset or one of statuses)
// and --limit (positive) and returns the query carrying them.
func listQuery(status string, statuses []string, limit int) (url.Values, error) {
	if status != "" && !contains(statuses, status) {
		return nil, fail(ExitInvalid, "--status %q: want one of %s", status, strings.Join(statuses, ", "))
	}
	if limit < 1 {
		return nil, fail(ExitInvalid, "--limit %d: want a positive number", limit)
	}
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	q.Set("limit", strconv.Itoa(limit))
	return q, nil
}

// flagBytes reads the value of a flag that takes text, @FILE or - (stdin):
// the text itself, the file's bytes or stdin's. Errors name the flag and
// the file, never the value (it may hold secrets).
func (a *app) flagBytes(flag, value string) ([]byte, error) {
	switch {
	case value == "-":
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return nil, fail(ExitInvalid, "%s -: %v", flag, err)
		}
		return b, nil
	case strings.HasPrefix(value, "@"):
		b, err := os.ReadFile(value[1:])
		if err != nil {
			return nil, fail(ExitInvalid, "%s %s: %v", flag, value, err)
		}
		return b, nil
	}
	return []byte(value), nil
}
