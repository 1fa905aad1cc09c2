package http

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

// TestEndpointAndAuth: `endpoint` spells `url`; `auth` names a credential
// whose headers are sent (the task's own header of the same name wins).
func TestEndpointAndAuth(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	store := credentials.NewMemory()
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "hdr", Kind: "http_header", Data: M{"header": "X-Custom", "value": "from-cred"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "pg", Kind: "postgres", Data: M{"host": "h"}}); err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Credentials: store})
	o := tl.run(ctx, request{Config: M{"endpoint": s.URL + "/echo", "auth": "hdr"}})
	if o.Status != types.StatusOK || o.Result.(M)["data"].(M)["x_custom"] != "from-cred" {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	o = tl.run(ctx, request{Config: M{"endpoint": s.URL + "/echo", "auth": "hdr", "headers": M{"x-custom": "task"}}})
	if o.Result.(M)["data"].(M)["x_custom"] != "task" {
		t.Fatalf("%#v", o.Result)
	}
	o = tl.run(ctx, request{Config: M{"url": s.URL + "/echo", "auth": M{}}})
	if o.Status != types.StatusOK {
		t.Fatalf("auth: {} %+v", o.Error)
	}
	for _, a := range []any{"missing", "pg", 5} {
		o := tl.run(ctx, request{Config: M{"url": s.URL + "/echo", "auth": a}})
		if o.Status != types.StatusError || o.Error.Kind != "config" {
			t.Errorf("%v: %+v", a, o.Error)
		}
	}
	if o := New(Options{}).run(ctx, request{Config: M{"url": s.URL + "/echo", "auth": "hdr"}}); o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Errorf("no store: %+v", o.Error)
	}
}
