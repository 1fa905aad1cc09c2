package secrets

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEnvReadable(t *testing.T) {
	allow := []string{"NOETL_SECRET_*", "API_KEY", "PARTNER_*", "NOETL_PG_DSN", "GOOGLE_APPLICATION_CREDENTIALS", "PUBSUB_EMULATOR_HOST", "HOME", "*"}
	for name, want := range map[string]bool{
		"NOETL_SECRET_TOKEN":             true,
		"API_KEY":                        true,
		"API_KEY2":                       false, // exact names only
		"PARTNER_TOKEN":                  true,
		"NOETL_PG_DSN":                   false, // the engine's own, even if listed
		"NOETL_PYTHON":                   false,
		"GOOGLE_APPLICATION_CREDENTIALS": false,
		"PUBSUB_EMULATOR_HOST":           false,
		"HOME":                           false,
		"K_SERVICE":                      false,
		"OTHER":                          false, // a bare "*" allows nothing
		"":                               false,
		"A=B":                            false,
	} {
		if got := EnvReadable(name, allow); got != want {
			t.Errorf("EnvReadable(%q) = %v, want %v", name, got, want)
		}
	}
	if EnvReadable("NOETL_SECRET_X", []string{}) {
		t.Error("an empty allow-list must allow nothing")
	}
}

func TestEnvProvider(t *testing.T) {
	tl := New(Options{Getenv: env(map[string]string{"NOETL_SECRET_API": "k-123", "NOETL_SECRET_B": "b-456", "NOETL_PG_DSN": "postgres://x:pw@h/db", "API_KEY": "nope"})})
	ctx := context.Background()
	o := tl.Exec(ctx, nil, map[string]any{"provider": "env", "key": "NOETL_SECRET_API"}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any{"name": "NOETL_SECRET_API", "value": "k-123"}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	if !reflect.DeepEqual(o.Extra[ExtraSecrets], []string{"k-123"}) {
		t.Fatalf("extra %#v", o.Extra)
	}
	o = tl.Exec(ctx, nil, map[string]any{"provider": "env", "map": map[string]any{"a": "NOETL_SECRET_API", "b": "NOETL_SECRET_B"}}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any{"a": "k-123", "b": "b-456"}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	if !reflect.DeepEqual(o.Extra[ExtraSecrets], []string{"b-456", "k-123"}) {
		t.Fatalf("extra %#v", o.Extra)
	}
	for cfg, kind := range map[string]map[string]any{
		"config":    {"provider": "env", "key": "NOETL_PG_DSN"},
		"config ":   {"provider": "env", "key": "API_KEY"}, // not allow-listed by default
		"not_found": {"provider": "env", "key": "NOETL_SECRET_MISSING"},
	} {
		o := tl.Exec(ctx, nil, kind, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != strings.TrimSpace(cfg) || o.Error.Retryable {
			t.Errorf("%v: %+v", kind, o.Error)
		}
		if o.Error != nil && strings.Contains(o.Error.Message, "pw@") {
			t.Errorf("message leaks a value: %s", o.Error.Message)
		}
	}
	// The operator's allow-list opts a variable in.
	tl2 := New(Options{EnvAllow: []string{"API_KEY"}, Getenv: env(map[string]string{"API_KEY": "yes"})})
	if o := tl2.Exec(ctx, nil, map[string]any{"provider": "env", "key": "API_KEY"}, 0); o.Status != types.StatusOK {
		t.Fatalf("%+v", o.Error)
	}
}

type failingStore struct{ credentials.Store }

func (failingStore) CredentialGet(context.Context, string) (*credentials.Credential, error) {
	return nil, errors.New("firestore unavailable")
}

func TestCredentialProvider(t *testing.T) {
	ctx := context.Background()
	m := credentials.NewMemory()
	if err := m.CredentialPut(ctx, credentials.Credential{Name: "api", Kind: "http_bearer", Data: map[string]any{"token": "tok-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.CredentialPut(ctx, credentials.Credential{Name: "pg", Kind: "postgres", Data: map[string]any{"host": "h", "password": "pw-2", "port": 5432}}); err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Credentials: m})
	o := tl.Exec(ctx, nil, map[string]any{"key": "api"}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any{"kind": "http_bearer", "token": "tok-1"}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	o = tl.Exec(ctx, nil, map[string]any{"provider": "keychain", "map": map[string]any{"token": "api.token", "db": "pg"}}, 0)
	want := map[string]any{"token": "tok-1", "db": map[string]any{"kind": "postgres", "host": "h", "password": "pw-2", "port": int64(5432)}}
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, want) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	if !reflect.DeepEqual(o.Extra[ExtraSecrets], []string{"h", "pw-2", "tok-1"}) {
		t.Fatalf("extra %#v", o.Extra[ExtraSecrets])
	}
	for _, c := range []struct {
		tool *Tool
		cfg  map[string]any
		kind string
	}{
		{tl, map[string]any{"key": "missing"}, "not_found"},
		{tl, map[string]any{"map": map[string]any{"x": "api.nope"}}, "not_found"},
		{tl, map[string]any{"map": map[string]any{}}, "config"},
		{tl, map[string]any{}, "config"},
		{tl, map[string]any{"provider": "gcp", "key": "x"}, "config"},
		{New(Options{}), map[string]any{"key": "api"}, "config"},
		{New(Options{Credentials: failingStore{}}), map[string]any{"key": "api"}, "credentials"},
	} {
		o := c.tool.Exec(ctx, nil, c.cfg, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind || o.Error.Retryable != (c.kind == "credentials") {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
}

func TestDefaultAndSecretName(t *testing.T) {
	ctx := context.Background()
	tl := New(Options{Credentials: credentials.NewMemory(), Getenv: env(map[string]string{"NOETL_SECRET_A": "a-1"})})
	o := tl.Exec(ctx, nil, map[string]any{"provider": "env", "secret_name": "NOETL_SECRET_A"}, 0)
	if o.Status != types.StatusOK || o.Result.(map[string]any)["value"] != "a-1" {
		t.Fatalf("%+v", o.Error)
	}
	o = tl.Exec(ctx, nil, map[string]any{"provider": "env", "key": "NOETL_SECRET_MISSING", "default": "fallback"}, 0)
	if o.Status != types.StatusOK || o.Result.(map[string]any)["value"] != "fallback" || len(o.Extra[ExtraSecrets].([]string)) != 0 {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	o = tl.Exec(ctx, nil, map[string]any{"map": map[string]any{"x": "nope.field"}, "default": nil}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any{"x": nil}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	// default never hides a denied variable.
	o = tl.Exec(ctx, nil, map[string]any{"provider": "env", "key": "NOETL_PG_DSN", "default": "x"}, 0)
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
}
