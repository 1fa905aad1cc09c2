package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/display"
)

// Exit codes of every command (documented in `noetl --help`).
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailed: the execution failed or was canceled (run), or run gave
	// up waiting (--timeout), or rebuild left gaps in the log (listed).
	ExitFailed = 1
	// ExitInvalid: invalid input: a usage error, an invalid playbook,
	// flag or argument, or a request the api refused (400, 409, 422).
	ExitInvalid = 2
	// ExitNotFound: an unknown execution, DLQ entry, playbook or
	// credential (404), or no spans for `trace`.
	ExitNotFound = 3
	// ExitUnavailable: the api is unreachable or unavailable (connection
	// refused, 5xx, no answer for PollGiveUp while polling) or the caller
	// is unauthorized (401, 403, no token could be obtained).
	ExitUnavailable = 4
)

// exitHelp is the exit-code table shown by `noetl --help`.
const exitHelp = `Exit codes:
  0  ok
  1  the execution failed or was canceled (run), or run gave up waiting (--timeout);
     rebuild: the rebuilt log has gaps (listed)
  2  invalid input: usage, an invalid playbook, flag or argument, or a request the
     api refused (400, 409 e.g. cancel of an ended execution, 422)
  3  not found: unknown execution, DLQ entry, playbook or credential (404);
     trace: no spans for the execution
  4  api unreachable or unavailable (connection error, 5xx, no answer for 30 s while
     run or events --follow poll) or unauthorized (401/403, no token obtainable)`

// Defaults of the api client.
const (
	// DefaultAPIURL is the local stack's api (scripts/up).
	DefaultAPIURL = "http://127.0.0.1:8680/api"
	// PollGiveUp is how long run and events --follow keep polling an api
	// that does not answer (connection errors, 5xx) before exit 4.
	PollGiveUp = 30 * time.Second
	// PollInterval is the pause between two polls of run and events
	// --follow.
	PollInterval = 300 * time.Millisecond
	// RequestTimeout bounds one HTTP request.
	RequestTimeout = 30 * time.Second
)

// exitError is an error with the process exit code it maps to. An empty
// message means the command already reported on stderr.
type exitError struct {
	code int
	msg  string
	// transport marks a request that got no answer (connection refused,
	// timeout): polling may retry it.
	transport bool
}

func (e *exitError) Error() string { return e.msg }

// fail returns an exitError with a formatted message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// app is one invocation of the CLI: its streams, environment and the
// settings of its global flags. Tests build it with fakes.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// env reads the environment (os.Getenv; tests pass a map).
	env func(string) string
	// isTTY reports whether stdout is a terminal (default --output).
	isTTY bool
	// hc is the HTTP client of the api.
	hc *http.Client
	// giveUp and interval tune polling (PollGiveUp, PollInterval).
	giveUp, interval time.Duration
	// settle is how long events --follow waits, after the execution
	// ended, for the events list to stop growing.
	settle time.Duration

	// Global flags.
	apiURL, tokenFlag, output string
	// impersonate is the service account gcloud mints identity tokens
	// of (--impersonate-service-account, $NOETL_IMPERSONATE_SERVICE_ACCOUNT).
	impersonate string

	// token caches the bearer token once resolved (tokenDone);
	// tokenMinted says it came from gcloud (identity tokens expire after
	// an hour: a 401 mints a new one once).
	token       string
	tokenDone   bool
	tokenMinted bool
}

// Main runs the CLI with os.Args[1:] and returns the exit code.
func Main(args []string) int {
	fi, err := os.Stdout.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: os.Getenv, isTTY: tty}
	return a.run(args)
}

// run executes one command line and maps its error to an exit code,
// reporting it on stderr.
func (a *app) run(args []string) int {
	// Whatever the api returns (a step's error text, a playbook's name, an
	// event field) reaches the terminal with its control characters
	// escaped (shared/display), tables and JSON alike.
	out, errOut := display.NewWriter(a.stdout), display.NewWriter(a.stderr)
	a.stdout, a.stderr = out, errOut
	defer func() { _ = out.Flush(); _ = errOut.Flush() }()
	if a.hc == nil {
		a.hc = &http.Client{Timeout: RequestTimeout}
	}
	if a.giveUp == 0 {
		a.giveUp = PollGiveUp
	}
	if a.interval == 0 {
		a.interval = PollInterval
	}
	if a.settle == 0 {
		a.settle = 2 * time.Second
	}
	root := a.rootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(a.stderr, "noetl: "+ee.msg)
		}
		return ee.code
	}
	// Anything else comes from cobra: an unknown command, a bad flag, a
	// wrong number of arguments.
	fmt.Fprintln(a.stderr, "noetl: "+err.Error())
	fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return ExitInvalid
}

// rootCmd builds the command tree.
func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "noetl",
		Short: "Validate, run and operate NoETL playbooks on the noetl-gcp engine",
		Long: `noetl validates and lints playbooks locally (and prints the DSL's JSON Schema
for editors) and operates the engine through
the api function's HTTP API: start and follow executions, list and describe them,
show their events, cost and trace, cancel them, work the dead-letter queue (DLQ),
the playbook catalog and the credential store.

The api is --api-url, else $NOETL_API_URL, else $NOETL_FUNCTIONS_URL/api (the local
stack's .stack/env), else ` + DefaultAPIURL + `. Every request carries
"Authorization: Bearer <token>" when a token is known: --token, else $NOETL_API_TOKEN,
else, for an api that is not local (not 127.0.0.1/localhost), an identity token from
"gcloud auth print-identity-token --audiences=<api url> --include-email", minted as
--impersonate-service-account (default $NOETL_IMPERSONATE_SERVICE_ACCOUNT) when set:
gcloud mints tokens for an audience only for service accounts, so people impersonate
the deployment's operator account (terraform output -raw operator_service_account).

--output table (the default on a terminal) prints for people; --output json (the
default when stdout is a pipe or a file, or $NOETL_OUTPUT) prints the api's JSON for
scripts. validate and lint keep their own formats; run and wait print a summary
(table) or one JSON line (json).

` + exitHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			fmt.Fprint(a.stderr, cmd.UsageString())
			return &exitError{code: ExitInvalid}
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("noetl {{.Version}}\n")
	root.InitDefaultVersionFlag() // now, not at Execute: the tree is whole for the docs' test
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return err })
	pf := root.PersistentFlags()
	pf.StringVar(&a.apiURL, "api-url", "", "api base URL (default $NOETL_API_URL, else $NOETL_FUNCTIONS_URL/api, else "+DefaultAPIURL+")")
	pf.StringVar(&a.tokenFlag, "token", "", "bearer token (default $NOETL_API_TOKEN; for a non-local api, gcloud auth print-identity-token)")
	pf.StringVar(&a.impersonate, "impersonate-service-account", "", "service account whose identity token gcloud mints for a non-local api (default $NOETL_IMPERSONATE_SERVICE_ACCOUNT; on GCP: terraform output -raw operator_service_account)")
	pf.StringVarP(&a.output, "output", "o", "", "output format: table or json (default $NOETL_OUTPUT, else table on a terminal, json otherwise)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if _, err := a.format(); err != nil {
			return err
		}
		return nil
	}
	root.AddCommand(a.validateCmd(), a.lintCmd(), a.schemaCmd(), a.runCmd(), a.waitCmd(),
		a.listCmd(), a.describeCmd(), a.eventsCmd(), a.cancelCmd(), a.rerunCmd(), a.costCmd(), a.traceCmd(),
		a.rebuildCmd(), a.gcCmd(), a.resultsCmd(), a.stepCmd(), a.dlqCmd(), a.catalogCmd(), a.credentialsCmd(), a.subscriptionCmd())
	return root
}

// format returns the output format: "table" or "json".
func (a *app) format() (string, error) {
	f := a.output
	if f == "" {
		f = a.env("NOETL_OUTPUT")
	}
	if f == "" {
		if a.isTTY {
			return "table", nil
		}
		return "json", nil
	}
	f = strings.ToLower(f)
	if f != "table" && f != "json" {
		return "", fail(ExitInvalid, "--output %q: want table or json", f)
	}
	return f, nil
}

// jsonOut reports whether the output format is json.
func (a *app) jsonOut() bool {
	f, _ := a.format()
	return f == "json"
}

// base returns the api base URL without a trailing slash.
func (a *app) base() string {
	u := a.apiURL
	if u == "" {
		u = a.env("NOETL_API_URL")
	}
	if u == "" {
		if f := a.env("NOETL_FUNCTIONS_URL"); f != "" {
			u = strings.TrimSuffix(f, "/") + "/api"
		}
	}
	if u == "" {
		u = DefaultAPIURL
	}
	return strings.TrimSuffix(u, "/")
}
