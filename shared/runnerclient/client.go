package runnerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// ErrKindRunner is the error kind of an attempt the runner could not be
// asked to run or did not answer (unreachable, refused the caller, sent a
// malformed answer). It is retryable unless the runner refused the
// request itself as malformed (400).
const ErrKindRunner = types.ErrKindRunner

// MaxResponseBytes is the largest answer a Client reads (the runner's
// tools cap their results below it: python 64 MiB of JSON).
const MaxResponseBytes = 96 << 20

// TokenSource returns the bearer token of a call to the runner (an ID
// token whose audience is the runner's URL). Implementations cache tokens
// and are safe for concurrent use.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// CredentialResolver returns a credential a task may use, or an error
// wrapping credentials.ErrNotFound when there is none it may use (the
// task then fails in the runner exactly as with an unknown name). It
// decides the grant: the control plane's resolver can refuse a credential
// the execution's playbook is not granted by wrapping ErrNotFound or by
// any other error (the attempt then fails with error kind "credentials").
type CredentialResolver interface {
	ResolveCredential(ctx context.Context, req tools.Request, name string) (*credentials.Credential, error)
}

// StoreResolver resolves credentials from a credential store, granting
// every credential of the store (grants are the credential store's
// concern: wrap it to restrict them).
type StoreResolver struct{ Store credentials.Store }

// ResolveCredential implements CredentialResolver.
func (s StoreResolver) ResolveCredential(ctx context.Context, _ tools.Request, name string) (*credentials.Credential, error) {
	if s.Store == nil {
		return nil, credentials.ErrNotFound
	}
	return s.Store.CredentialGet(ctx, name)
}

// Client runs tasks in a runner. It is safe for concurrent use.
type Client struct {
	// URL is the runner's base URL (NOETL_RUNNER_URL).
	URL string
	// HTTP sends the calls; nil means a client with keep-alive
	// connections (many tasks run at once: up to 256 idle connections).
	HTTP *http.Client
	// Tokens authenticates the calls; nil sends none (a runner that
	// verifies callers refuses them).
	Tokens TokenSource
	// Credentials resolves the credential names a task's configuration
	// uses; nil grants none.
	Credentials CredentialResolver
	// Results grants the attempts the result-tier objects they may read
	// and write (grants.go); nil grants none (a runner kind then cannot
	// read a stored result or stream its table into the tier).
	Results *Granter
	// Observe, when set, receives every call's round trip and the
	// runner's own time (for the hop's cost: round trip minus run).
	Observe func(kind string, roundTrip, run time.Duration)

	once sync.Once
	http *http.Client
}

// Tool returns the tools.Tool that runs kind in the runner.
func (c *Client) Tool(kind string) tools.Tool { return remote{c: c, kind: kind} }

// Registry returns a registry of the runner kinds (kinds) run by c.
func (c *Client) Registry(kinds []string) tools.Registry {
	r := tools.Registry{}
	for _, k := range kinds {
		r[k] = c.Tool(k)
	}
	return r
}

type remote struct {
	c    *Client
	kind string
}

// Run implements tools.Tool.
func (r remote) Run(ctx context.Context, req tools.Request) types.Outcome {
	return r.c.Run(ctx, r.kind, req)
}

func (c *Client) client() *http.Client {
	c.once.Do(func() {
		c.http = c.HTTP
		if c.http == nil {
			c.http = &http.Client{Transport: &http.Transport{
				Proxy:               nil, // the runner is called directly, never through a proxy of the environment
				DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConns:        256,
				MaxIdleConnsPerHost: 256,
				IdleConnTimeout:     90 * time.Second,
				ForceAttemptHTTP2:   true,
			}}
		}
	})
	return c.http
}

// fail is an outcome of kind k.
func fail(k types.ErrorKind, retryable bool, format string, args ...any) types.Outcome {
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: k, Retryable: retryable, Message: fmt.Sprintf(format, args...)}}
}

// Run sends one attempt of a task of kind to the runner and returns its
// outcome. The request carries the credentials the configuration names
// (CredentialNames) that Credentials grants. Failures of the hop are
// outcomes of kind ErrKindRunner (retryable, but for a request the runner
// refuses as malformed), "canceled" or "timeout" when ctx ends, and
// "credentials" (retryable) when the resolver fails.
func (c *Client) Run(ctx context.Context, kind string, req tools.Request) types.Outcome {
	wr := runnerproto.Request{Version: runnerproto.Version, Kind: kind, ExecutionID: req.ExecutionID, Step: req.Step, Task: req.Task, Attempt: req.Attempt,
		Args: req.Args, Config: req.Config, Context: req.Context, TimeoutS: req.TimeoutS,
		Barrier: req.Barrier, BarrierKey: req.BarrierMAC, Inputs: req.Inputs}
	for _, name := range CredentialNames(req.Config) {
		if c.Credentials == nil {
			break
		}
		cr, err := c.Credentials.ResolveCredential(ctx, req, name)
		if errors.Is(err, credentials.ErrNotFound) {
			continue // the runner reports the unknown name as the kind does
		}
		if err != nil {
			return fail(types.ErrKindCredentials, true, "%s task: credential %q: %v", kind, name, err)
		}
		if wr.Credentials == nil {
			wr.Credentials = map[string]credentials.Credential{}
		}
		wr.Credentials[name] = *cr
	}
	grants, err := c.Results.Grants(ctx, kind, req)
	if err != nil {
		return grantFailure(kind, err)
	}
	wr.Results = grants
	body, err := runnerproto.Encode(wr)
	if err != nil {
		return fail(types.ErrKindConfig, false, "%s task: the request cannot be sent to the runner: %v", kind, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+runnerproto.RunPath, bytes.NewReader(body))
	if err != nil {
		return fail(ErrKindRunner, false, "%s task: runner URL %q: %v", kind, c.URL, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.Tokens != nil {
		tok, err := c.Tokens.Token(ctx)
		if err != nil {
			return fail(ErrKindRunner, true, "%s task: no token to call the runner: %v", kind, err)
		}
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	t0 := time.Now()
	resp, err := c.client().Do(hr)
	if err != nil {
		return c.hopFailure(ctx, kind, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return c.hopFailure(ctx, kind, err)
	}
	if len(b) > MaxResponseBytes {
		return fail(ErrKindRunner, false, "%s task: the runner's answer exceeds %d MiB", kind, MaxResponseBytes>>20)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		var eb runnerproto.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		}
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return fail(ErrKindRunner, resp.StatusCode != http.StatusBadRequest, "%s task: the runner answered %s: %s", kind, resp.Status, msg)
	}
	out, err := runnerproto.DecodeResponse(b)
	if err != nil {
		return fail(ErrKindRunner, true, "%s task: %v", kind, err)
	}
	if c.Observe != nil {
		c.Observe(kind, time.Since(t0), time.Duration(out.RunMS*float64(time.Millisecond)))
	}
	if err := checkRefs(out.Outcome.Result, grants, req); err != nil {
		return fail(types.ErrKindForbidden, false, "%s task: %v", kind, err)
	}
	return out.Outcome
}

// grantFailure is the outcome of an attempt whose result grants could
// not be issued: a stored result the execution may not read (forbidden),
// one that is gone (result_lost), a malformed reference (config), or a
// failure of the tier or the signer (storage, retryable).
func grantFailure(kind string, err error) types.Outcome {
	switch {
	case errors.Is(err, results.ErrForbidden):
		return fail(types.ErrKindForbidden, false, "%s task: %v", kind, err)
	case errors.Is(err, results.ErrNotFound), errors.Is(err, results.ErrLost):
		return fail(types.ErrKindResultLost, false, "%s task: %v", kind, err)
	case errors.Is(err, results.ErrBadRef), errors.Is(err, results.ErrBadURI):
		return fail(types.ErrKindConfig, false, "%s task: %v", kind, err)
	}
	return fail(types.ErrKindStorage, true, "%s task: result grants: %v", kind, err)
}

// hopFailure is the outcome of a call that got no answer.
func (c *Client) hopFailure(ctx context.Context, kind string, err error) types.Outcome {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return fail(types.ErrKindCanceled, true, "%s task canceled: %v", kind, context.Cause(ctx))
	case ctx.Err() != nil:
		return fail(types.ErrKindTimeout, true, "%s task: timed out waiting for the runner", kind)
	}
	return fail(ErrKindRunner, true, "%s task: runner at %s unreachable: %v", kind, c.URL, err)
}

// credentialKeys are the configuration keys whose string values name
// credentials: `auth` (every kind, script sources, transfer ends) and
// `credential` (transfer, secrets-like maps).
var credentialKeys = map[string]bool{"auth": true, "credential": true}

// CredentialNames returns the credential names a task configuration
// uses, sorted and without duplicates: every string under a key `auth`
// or `credential`, at any depth (a script's source.auth, a transfer's
// source.auth and target.auth), that is a valid credential name (a DSN
// written under `auth` is not).
func CredentialNames(cfg map[string]any) []string {
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && credentialKeys[k] {
					if n := strings.TrimSpace(s); credentials.ValidateName(n) == nil {
						seen[n] = true
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(cfg)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
