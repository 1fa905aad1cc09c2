// Package runnerproto is the protocol between the engine's two planes (README
// "Architecture"): the control plane (api, route, materialize, dispatch,
// execute: keys, state, queues) and the runner, the process that runs the
// task kinds whose configuration is author code or an author-chosen
// endpoint (RunnerKinds: python, shell, duckdb, postgres, transfer, gcs,
// nats, subscription, and every `script:` source they load).
//
// The protocol is one HTTP request per task attempt: execute POSTs a
// Request (the rendered task, the credentials it is granted, the barrier
// key of its side-effect record, the result references it may read) to
// <runner>/v1/run with an ID token of its service account
// (Authorization: Bearer), and the runner answers a Response holding the
// attempt's Outcome. The runner keeps no state between requests and holds
// no engine secret: what a task may use travels in its request and
// nowhere else.
//
// This package holds what both sides read and write (Request, Response,
// the result grants, their encoding) and nothing of either side:
//
//   - shared/runnerclient is the control plane's side: a tools.Tool per
//     runner kind (Client.Tool), so the worker runs a remote kind exactly
//     as a local one, and the Granter of result grants.
//   - runner/server is the runner's side: its Handler verifies the caller
//     (Verifier), decodes the request and runs the kind's tool from its
//     local registry with a credential store that holds only the
//     request's credentials (GrantedStore), over a results tier of the
//     granted objects only (WithResultGrants).
//
// Authentication is the same in GCP and on the local stack: the caller's
// ID token (audience: the runner's URL, email: execute's service account)
// is verified with shared/oidc. In GCP Cloud Run's IAM admits only
// execute's service account (run.invoker) and the token comes from the
// metadata server; on the stack execute mints it with a key of its own
// (NOETL_RUNNER_TOKEN_KEY_FILE) whose public half the runner reads
// (NOETL_RUNNER_JWKS_FILE). The runner holds no key that signs anything.
package runnerproto

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Version is the protocol version a Request carries; a runner refuses
// any other with 400.
const Version = 1

// RunPath is the path of the run endpoint; HealthPath answers 200 "ok"
// without authentication (Cloud Run's and the stack's health checks).
const (
	RunPath    = "/v1/run"
	HealthPath = "/healthz"
)

// MaxRequestBytes is the largest request body a runner reads (32 MiB: a
// task's rendered args and context); a larger one is refused with 413.
const MaxRequestBytes = 32 << 20

// Request is one task attempt sent to the runner.
type Request struct {
	// Version is the protocol version (Version).
	Version int `json:"v"`
	// Kind is the task kind (one of RunnerKinds).
	Kind string `json:"kind"`
	// ExecutionID, Step, Task and Attempt name the attempt (logs, error
	// messages, the python `context`).
	ExecutionID string `json:"execution_id"`
	Step        string `json:"step"`
	Task        string `json:"task"`
	Attempt     int    `json:"attempt"`
	// Args, Config, Context and TimeoutS are tools.Request's: the rendered
	// args, the kind's rendered configuration, the execution context the
	// task may read and the attempt's timeout in seconds.
	Args     map[string]any `json:"args,omitempty"`
	Config   map[string]any `json:"config,omitempty"`
	Context  map[string]any `json:"context,omitempty"`
	TimeoutS float64        `json:"timeout_s,omitempty"`
	// Barrier is the attempt's side-effect barrier key (tools.Request).
	Barrier string `json:"barrier,omitempty"`
	// BarrierKey is the secret that authenticates the barrier record of
	// this attempt (tools.Request.BarrierMAC), for the kind to MAC the row
	// it writes with its side effect and to check a row it finds.
	BarrierKey []byte `json:"barrier_key,omitempty"`
	// Credentials are the credentials the task is granted, by name: the
	// runner's tools resolve `auth:` and `credential:` names from these
	// and from nothing else.
	Credentials map[string]credentials.Credential `json:"credentials,omitempty"`
	// Inputs are the result references the task may read
	// (tools.Request.Inputs: "$ref" maps as the results tier writes them).
	Inputs []map[string]any `json:"inputs,omitempty"`
	// Results are the result-tier objects the attempt may read and the
	// one it may write, as signed URLs (grants.go; nil: none).
	Results *ResultGrants `json:"results,omitempty"`
}

// Response is the runner's answer to a Request (HTTP 200).
type Response struct {
	// Outcome is the attempt's outcome (Outcome.Extra travels in Extra).
	Outcome types.Outcome `json:"outcome"`
	// Extra is Outcome.Extra (e.g. "adopted": true of a barrier the kind
	// found already recorded).
	Extra map[string]any `json:"extra,omitempty"`
	// RunMS is the time the runner spent on the attempt (decoding, the
	// tool, encoding), in milliseconds: the caller's round trip minus
	// RunMS is the cost of the hop.
	RunMS float64 `json:"run_ms"`
}

// ErrorBody is the body of a runner's non-200 answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// Encode marshals v (a Request or Response) for the wire. Whole floats
// keep their decimal point ("2.0"), so that the receiver's jsonx decoding
// gives back a float64, and whole numbers of integer types stay integers:
// values cross the boundary with their JSON type. Values JSON cannot hold
// (NaN, channels, functions) are an error.
func Encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case Request:
		x.Args, x.Config, x.Context = wireMap(x.Args), wireMap(x.Config), wireMap(x.Context)
		for n, c := range x.Credentials {
			c.Data = wireMap(c.Data)
			x.Credentials[n] = c
		}
		return json.Marshal(x)
	case Response:
		x.Outcome.Result = wire(x.Outcome.Result)
		x.Extra = wireMap(x.Extra)
		return json.Marshal(x)
	}
	return nil, fmt.Errorf("runner: cannot encode %T", v)
}

// DecodeRequest decodes a Request: generic values as jsonx decodes them
// (whole numbers int64, others float64).
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if err := jsonx.Unmarshal(b, &r); err != nil {
		return Request{}, fmt.Errorf("runner: decode request: %w", err)
	}
	r.Args, r.Config, r.Context = jsonx.NormalizeMap(r.Args), jsonx.NormalizeMap(r.Config), jsonx.NormalizeMap(r.Context)
	for n, c := range r.Credentials {
		c.Data = jsonx.NormalizeMap(c.Data)
		if c.Name == "" {
			c.Name = n
		}
		r.Credentials[n] = c
	}
	return r, nil
}

// DecodeResponse decodes a Response and puts Extra back into the
// outcome (the "secrets" list as []string, as the secrets kind makes it).
func DecodeResponse(b []byte) (Response, error) {
	var r Response
	if err := jsonx.Unmarshal(b, &r); err != nil {
		return Response{}, fmt.Errorf("runner: decode response: %w", err)
	}
	r.Outcome.Result = jsonx.Normalize(r.Outcome.Result)
	r.Extra = jsonx.NormalizeMap(r.Extra)
	if len(r.Extra) > 0 {
		if l, ok := r.Extra["secrets"].([]any); ok {
			s := make([]string, 0, len(l))
			for _, v := range l {
				if str, ok := v.(string); ok {
					s = append(s, str)
				}
			}
			r.Extra["secrets"] = s
		}
		r.Outcome.Extra = r.Extra
	}
	return r, nil
}

func wireMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return wire(m).(map[string]any)
}

// wire copies v, turning whole float64 values into json.Number with a
// decimal point.
func wire(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) && math.Abs(x) < 1e15 {
			return json.Number(strconv.FormatFloat(x, 'f', 1, 64))
		}
		return x
	case float32:
		return wire(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = wire(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = wire(e)
		}
		return out
	}
	return v
}
