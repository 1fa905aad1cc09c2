// Package runnerclient is the control plane's side of the runner protocol
// (shared/runnerproto): Client runs a runner kind remotely as a tools.Tool
// (one HTTP request per attempt, authenticated with an ID token of
// execute's service account: GoogleTokens in GCP, KeyTokens on the stack),
// and Granter signs the result-tier grants of an attempt and checks that
// the runner's answer names only objects it was granted. It is wired by
// shared/wiring; the runner links none of it (the boundary test,
// shared/planes). Its tests run the client against runner/server.
package runnerclient
