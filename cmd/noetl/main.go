// Command noetl is the engine's command-line client (scripts/noetl builds
// and runs it): it validates and lints playbooks locally and operates
// executions, the DLQ, the playbook catalog and the credential store
// through the api function's HTTP API (README "Security"; README "Architecture":
// cost; README "Resilience": cancel, dlq).
//
//	noetl validate FILE...                 validate playbooks (exit 2 on errors)
//	noetl lint FILE...                     validate + Petri-net analysis (exit 0 on warnings only)
//	noetl run FILE|--path P [--workload JSON] [--timeout D] [--quiet] [--detach]
//	                                       start an execution, show progress on stderr, print a
//	                                       summary (table) or one JSON line (json)
//	                                       {"execution_id","status","duration_ms","steps"}
//	noetl wait ID                          wait for an execution's end, print what run prints
//	noetl list [--status S] [--playbook P] [--limit N]
//	noetl describe ID                      (alias: status) steps, runs, durations, attempts, loops, failures
//	noetl events ID [--follow]
//	noetl cancel ID
//	noetl cost ID [--json]
//	noetl trace ID [--dir DIR]             span tree from the local trace files (NOETL_TRACE_DIR)
//	noetl dlq list|show|replay|discard
//	noetl catalog register|list|show
//	noetl credentials set|list|show|delete
//
// Global flags: --api-url (default $NOETL_API_URL, else
// $NOETL_FUNCTIONS_URL/api, else http://127.0.0.1:8680/api), --token
// (default $NOETL_API_TOKEN; for a non-local api without one, an identity
// token from `gcloud auth print-identity-token --audiences=<api url>
// --include-email`, as --impersonate-service-account when set),
// --output json|table (default $NOETL_OUTPUT, else table on a terminal and
// json when stdout is a pipe or a file).
//
// Exit codes: 0 ok, 1 the execution failed (or was canceled, or run gave
// up waiting), 2 invalid input (usage, an invalid playbook or argument, a
// request the api refused with 400/409/422), 3 not found (unknown
// execution, DLQ entry, playbook or credential; no spans for trace), 4 api
// unreachable, unavailable (5xx, no answer for 30 s while polling) or
// unauthorized (401/403, no token could be obtained).
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:]))
}
