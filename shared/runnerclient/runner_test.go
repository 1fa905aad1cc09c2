package runnerclient

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/noetl/gcpengine/runner/server"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// toolFunc is a tools.Tool from a function.
type toolFunc func(ctx context.Context, req tools.Request) types.Outcome

func (f toolFunc) Run(ctx context.Context, req tools.Request) types.Outcome { return f(ctx, req) }

// echo returns what it received, so that a test can compare both sides of
// the boundary.
var echo = toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
	var inputs []any
	for _, in := range req.Inputs {
		inputs = append(inputs, in)
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{
		"args": req.Args, "config": req.Config, "context": req.Context, "timeout_s": req.TimeoutS,
		"barrier": req.Barrier, "barrier_key": hex.EncodeToString(req.BarrierMAC), "inputs": inputs,
		"execution_id": req.ExecutionID, "step": req.Step, "task": req.Task, "attempt": int64(req.Attempt),
	}}
})

const testInvoker = "noetl-execute@test.iam.gserviceaccount.com"

// served starts a Handler over reg behind a verifier of a fresh key, and
// returns a Client with a token source of that key.
func served(t *testing.T, reg tools.Registry, creds CredentialResolver) (*Client, *httptest.Server) {
	t.Helper()
	key, err := oidc.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := oidc.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := sig.JWKS()
	dir := t.TempDir()
	jf := dir + "/jwks.json"
	if err := writeFile(jf, jwks); err != nil {
		t.Fatal(err)
	}
	h := &server.Handler{Tools: reg}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	v, err := server.NewTokenVerifier(context.Background(), srv.URL, testInvoker, jf)
	if err != nil {
		t.Fatal(err)
	}
	h.Auth = v
	return &Client{URL: srv.URL, Tokens: &KeyTokens{Signer: sig, Email: testInvoker, Audience: srv.URL}, Credentials: creds}, srv
}

// The request crosses the boundary unchanged: every field, and numbers
// keep their JSON type (whole floats stay float64, integers int64).
func TestRequestCrossesUnchanged(t *testing.T) {
	c, _ := served(t, tools.Registry{"python": echo}, nil)
	req := tools.Request{ExecutionID: "e1", Step: "s", Task: "t", Attempt: 3, TimeoutS: 2.5,
		Args:    map[string]any{"i": int64(2), "f": 2.0, "g": 0.5, "s": "x", "l": []any{int64(1), 1.0, nil, true}, "m": map[string]any{"n": 3.0}},
		Config:  map[string]any{"code": "result = 1", "libs": []any{"json"}},
		Context: map[string]any{"workload": map[string]any{"k": "v"}},
		Barrier: "e1/u/k", BarrierMAC: []byte("mac-key\x00\xff"),
		Inputs: []map[string]any{{"$ref": map[string]any{"uri": "noetl://default/default/results/e1/s/1/0/1",
			"key": "noetl/env=default/region=default/cell=default/shard=0003/tenant=default/project=default/date=2026-01-01/execution=e1/results/s/1/0/1.json"}}},
	}
	out := c.Tool("python").Run(context.Background(), req)
	if out.Status != types.StatusOK {
		t.Fatalf("outcome %+v", out.Error)
	}
	want := echo(context.Background(), req).Result
	if !reflect.DeepEqual(out.Result, want) {
		t.Fatalf("through the runner:\n %#v\nwant\n %#v", out.Result, want)
	}
	args := out.Result.(map[string]any)["args"].(map[string]any)
	if _, ok := args["f"].(float64); !ok {
		t.Errorf("2.0 came back as %T", args["f"])
	}
	if _, ok := args["i"].(int64); !ok {
		t.Errorf("2 came back as %T", args["i"])
	}
}

// The outcome crosses back unchanged, Extra included (adopted, secrets).
func TestOutcomeCrossesUnchanged(t *testing.T) {
	want := types.Outcome{Status: types.StatusError, Result: map[string]any{"rows": []any{map[string]any{"a": int64(1), "b": 1.0}}},
		Error: &types.TaskError{Kind: "postgres", Message: "boom", Retryable: true},
		PG:    &types.PGOutcome{Code: "23505", SQLState: "23505"}, Py: &types.PyOutcome{ExceptionType: "ValueError"},
		Logs: "printed\n", Extra: map[string]any{"adopted": true, "secrets": []string{"s1", "s2"}}}
	c, _ := served(t, tools.Registry{"postgres": toolFunc(func(context.Context, tools.Request) types.Outcome { return want })}, nil)
	got := c.Tool("postgres").Run(context.Background(), tools.Request{})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

// A task sees exactly the credentials its configuration names that the
// resolver grants; nothing else is in the runner's store.
func TestCredentialsByGrant(t *testing.T) {
	store := credentials.NewMemory()
	ctx := context.Background()
	for _, c := range []credentials.Credential{
		{Name: "pg_a", Kind: "postgres", Data: map[string]any{"host": "h", "password": "pa"}},
		{Name: "pg_b", Kind: "postgres", Data: map[string]any{"host": "h", "password": "pb"}},
		{Name: "nats_c", Kind: "nats", Data: map[string]any{"nats_url": "nats://x:4222"}},
	} {
		if err := store.CredentialPut(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	probe := toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
		l, _ := server.GrantedStore{}.CredentialList(ctx)
		seen = nil
		for _, s := range l {
			seen = append(seen, s.Name)
		}
		res := map[string]any{}
		for _, n := range []string{"pg_a", "pg_b", "nats_c"} {
			c, err := server.GrantedStore{}.CredentialGet(ctx, n)
			if err != nil {
				if !errors.Is(err, credentials.ErrNotFound) {
					t.Errorf("%s: %v, want ErrNotFound", n, err)
				}
				continue
			}
			res[n] = c.Data["password"]
		}
		if err := (server.GrantedStore{}).CredentialPut(ctx, credentials.Credential{Name: "x"}); !errors.Is(err, server.ErrReadOnly) {
			t.Errorf("put: %v", err)
		}
		return types.Outcome{Status: types.StatusOK, Result: res}
	})
	deny := denyResolver{StoreResolver{store}, "pg_b"}
	c, _ := served(t, tools.Registry{"transfer": probe}, deny)
	out := c.Tool("transfer").Run(ctx, tools.Request{Config: map[string]any{
		"source": map[string]any{"type": "postgres", "auth": "pg_a"},
		"target": map[string]any{"type": "postgres", "auth": "pg_b"},
		"script": map[string]any{"source": map[string]any{"auth": "missing_one"}},
		"auth":   "postgres://u:p@h/db", // a DSN, not a name
	}})
	if out.Status != types.StatusOK {
		t.Fatalf("%+v", out.Error)
	}
	if !reflect.DeepEqual(out.Result, map[string]any{"pg_a": "pa"}) || !reflect.DeepEqual(seen, []string{"pg_a"}) {
		t.Fatalf("the task saw %v (store %v), want only pg_a (pg_b is not granted, nats_c not named)", out.Result, seen)
	}
	// A resolver failure fails the attempt before anything is sent.
	c.Credentials = failResolver{}
	out = c.Tool("transfer").Run(ctx, tools.Request{Config: map[string]any{"auth": "pg_a"}})
	if out.Error == nil || out.Error.Kind != "credentials" || !out.Error.Retryable {
		t.Fatalf("resolver failure: %+v", out.Error)
	}
}

type denyResolver struct {
	StoreResolver
	deny string
}

func (d denyResolver) ResolveCredential(ctx context.Context, req tools.Request, name string) (*credentials.Credential, error) {
	if name == d.deny {
		return nil, credentials.ErrNotFound
	}
	return d.StoreResolver.ResolveCredential(ctx, req, name)
}

type failResolver struct{}

func (failResolver) ResolveCredential(context.Context, tools.Request, string) (*credentials.Credential, error) {
	return nil, errors.New("store down")
}

func TestCredentialNames(t *testing.T) {
	got := CredentialNames(map[string]any{
		"auth": "b", "x": map[string]any{"auth": "a", "credential": "c"}, "l": []any{map[string]any{"auth": "d"}},
		"y": map[string]any{"auth": map[string]any{"host": "inline"}}, "z": map[string]any{"auth": "host=h user=u"},
		"w": "auth", "v": map[string]any{"auth": " b "},
	})
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("CredentialNames = %v, want %v", got, want)
	}
}

// Only the invoker's tokens for the runner's audience are admitted.
func TestCallerAuthentication(t *testing.T) {
	c, srv := served(t, tools.Registry{"python": echo}, nil)
	ok := c.Tool("python").Run(context.Background(), tools.Request{})
	if ok.Status != types.StatusOK {
		t.Fatalf("authorised call: %+v", ok.Error)
	}
	other, _ := oidc.GenerateKey()
	otherSig, _ := oidc.NewSigner(other)
	sig := c.Tokens.(*KeyTokens).Signer
	for name, tokens := range map[string]TokenSource{
		"no token":         nil,
		"another key":      &KeyTokens{Signer: otherSig, Email: testInvoker, Audience: srv.URL},
		"another caller":   &KeyTokens{Signer: sig, Email: "noetl-api@test.iam.gserviceaccount.com", Audience: srv.URL},
		"another audience": &KeyTokens{Signer: sig, Email: testInvoker, Audience: "https://elsewhere"},
		"expired":          &KeyTokens{Signer: sig, Email: testInvoker, Audience: srv.URL, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }},
	} {
		bad := &Client{URL: srv.URL, Tokens: tokens}
		out := bad.Tool("python").Run(context.Background(), tools.Request{})
		if out.Error == nil || out.Error.Kind != ErrKindRunner || !strings.Contains(out.Error.Message, "401") {
			t.Errorf("%s: outcome %+v, want a runner error with 401", name, out.Error)
		}
	}
}

// Hop failures are outcomes the policy can act on, never a hang or a
// panic.
func TestHopFailures(t *testing.T) {
	c, srv := served(t, tools.Registry{"python": echo}, nil)
	out := c.Tool("duckdb").Run(context.Background(), tools.Request{})
	if out.Error == nil || out.Error.Kind != ErrKindRunner || out.Error.Retryable || !strings.Contains(out.Error.Message, "does not run in the runner") {
		t.Errorf("unknown kind: %+v", out.Error)
	}
	// A request of another protocol version.
	b, _ := json.Marshal(map[string]any{"v": 99, "kind": "python"})
	tok, _ := c.Tokens.Token(context.Background())
	r, _ := http.NewRequest(http.MethodPost, srv.URL+runnerproto.RunPath, strings.NewReader(string(b)))
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("version 99: %d, want 400", resp.StatusCode)
	}
	srv.Close()
	out = c.Tool("python").Run(context.Background(), tools.Request{})
	if out.Error == nil || out.Error.Kind != ErrKindRunner || !out.Error.Retryable || !strings.Contains(out.Error.Message, "unreachable") {
		t.Errorf("runner down: %+v", out.Error)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := c.Tool("python").Run(ctx, tools.Request{}); out.Error == nil || out.Error.Kind != "canceled" {
		t.Errorf("canceled: %+v", out.Error)
	}
}

// A tool's timeout reaches the runner and the runner's answer comes back;
// a caller that gives up cancels the attempt in the runner.
func TestCancelReachesTheRunner(t *testing.T) {
	stopped := make(chan struct{})
	slow := toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
		<-ctx.Done()
		close(stopped)
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "canceled"}}
	})
	c, _ := served(t, tools.Registry{"shell": slow}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out := c.Tool("shell").Run(ctx, tools.Request{})
	if out.Error == nil || out.Error.Kind != "timeout" {
		t.Fatalf("outcome %+v, want timeout", out.Error)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the runner's attempt was not canceled when the caller gave up")
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
