package creds

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
)

type brokenStore struct{ credentials.Store }

func (brokenStore) CredentialGet(context.Context, string) (*credentials.Credential, error) {
	return nil, errors.New("unavailable")
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	s := credentials.NewMemory()
	if err := s.CredentialPut(ctx, credentials.Credential{Name: "nats_credential", Kind: "nats", Data: map[string]any{"nats_url": "nats://h:1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CredentialPut(ctx, credentials.Credential{Name: "pg", Kind: "postgres", Data: map[string]any{"host": "h"}}); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(ctx, s, "nats_credential", "nats task", credentials.KindNATS)
	if err != nil || !reflect.DeepEqual(got, map[string]any{"nats_url": "nats://h:1", "kind": "nats"}) {
		t.Fatalf("%v %v", got, err)
	}
	inline := map[string]any{"nats_url": "nats://x:2"}
	got, err = Resolve(ctx, nil, inline, "nats task", credentials.KindNATS)
	if err != nil || got["nats_url"] != "nats://x:2" {
		t.Fatalf("%v %v", got, err)
	}
	got["nats_url"] = "changed"
	if inline["nats_url"] != "nats://x:2" {
		t.Fatal("Resolve returned the caller's map")
	}
	for _, c := range []struct {
		store credentials.Store
		auth  any
		kind  string
	}{
		{s, "missing", "config"},
		{s, "pg", "config"}, // wrong kind
		{s, map[string]any{"kind": "postgres"}, "config"},
		{s, "", "config"},
		{s, 5, "config"},
		{nil, "nats_credential", "config"},
		{brokenStore{}, "x", "credentials"},
	} {
		_, err := Resolve(ctx, c.store, c.auth, "nats task", credentials.KindNATS)
		o := Outcome(err)
		if err == nil || string(o.Error.Kind) != c.kind || o.Error.Retryable != (c.kind == "credentials") {
			t.Errorf("%v: %v %+v", c.auth, err, o.Error)
		}
	}
}
