package credentials_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
)

// TestValidateServiceKinds checks the nats, pubsub and gcs rules of
// Credential.Validate: the shapes NoETL's v2 end-to-end fixtures register are
// accepted, and each malformed shape is rejected with a message naming the
// field.
func TestValidateServiceKinds(t *testing.T) {
	ok := []credentials.Credential{
		{Name: "nats_credential", Kind: "nats", Data: map[string]any{"nats_url": "nats://127.0.0.1:8786", "nats_user": "u", "nats_password": "p"}},
		{Name: "n2", Kind: "nats", Data: map[string]any{"url": "nats://a:1,tls://b:2"}},
		{Name: "n3", Kind: "jetstream", Data: map[string]any{"nats_url": "nats://a:1", "token": "t"}},
		{Name: "pubsub_e2e", Kind: "pubsub", Data: map[string]any{"endpoint": "127.0.0.1:8681"}},
		{Name: "ps2", Kind: "pubsub", Data: map[string]any{"endpoint": "http://127.0.0.1:8681"}},
		{Name: "ps3", Kind: "google_pubsub", Data: map[string]any{"project": "p"}},
		{Name: "gcs_local", Kind: "gcs", Data: map[string]any{"endpoint": "http://127.0.0.1:8683"}},
		{Name: "gcs_sa", Kind: "gcs", Data: map[string]any{"service_account_json": `{"type": "service_account", "project_id": "p"}`}},
		{Name: "gcs_sa2", Kind: "gcs", Data: map[string]any{"service_account_json": map[string]any{"type": "service_account"}}},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%s %v) = %v", c.Kind, c.Data, err)
		}
	}
	bad := []struct {
		kind string
		data map[string]any
		want string
	}{
		{"nats", map[string]any{"nats_user": "u", "nats_password": "p"}, "needs nats_url"},
		{"nats", map[string]any{"nats_url": "http://x:1"}, "scheme nats, tls, ws or wss"},
		{"nats", map[string]any{"nats_url": "nats://u:Secr3t@x:1", "x": 1, "nats_user": "u"}, "nats_user and nats_password together"},
		{"nats", map[string]any{"nats_url": 4222}, "non-empty string"},
		{"nats", map[string]any{"nats_url": "localhost"}, "not a URL"},
		{"pubsub", map[string]any{"host": "x"}, "needs one of endpoint, project, token"},
		{"pubsub", map[string]any{"endpoint": "no-port"}, "host:port or an http(s) URL"},
		{"pubsub", map[string]any{"endpoint": "ftp://x:1"}, "host:port or an http(s) URL"},
		{"pubsub", map[string]any{"token": 5}, "token must be a non-empty string"},
		{"gcs", map[string]any{"bucket": "b"}, "needs one of endpoint, project, service_account_json"},
		{"gcs", map[string]any{"service_account_json": "not json"}, "service_account_json must be the service account key"},
		{"gcs", map[string]any{"project": ""}, "project must be a non-empty string"},
	}
	for _, b := range bad {
		err := credentials.Credential{Name: "c", Kind: b.kind, Data: b.data}.Validate()
		if !errors.Is(err, credentials.ErrInvalid) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate(%s %v) = %v; want ErrInvalid containing %q", b.kind, b.data, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), "Secr3t") {
			t.Errorf("message leaks the password: %v", err)
		}
	}
}

// TestResolveServiceKinds resolves keychain entries of the new kinds from a
// store (data plus kind and source) and rejects a declared kind that
// disagrees with the stored one.
func TestResolveServiceKinds(t *testing.T) {
	m := credentials.NewMemory()
	ctx := context.Background()
	for _, c := range []credentials.Credential{
		{Name: "nats_credential", Kind: "nats", Data: map[string]any{"nats_url": "nats://127.0.0.1:8786"}},
		{Name: "pubsub_e2e", Kind: "pubsub", Data: map[string]any{"endpoint": "127.0.0.1:8681"}},
	} {
		if err := m.CredentialPut(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := credentials.Resolve(ctx, m, []any{decl("name", "nats_credential", "kind", "nats"), decl("name", "ps", "credential", "pubsub_e2e")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := kc["nats_credential"].(map[string]any); e["kind"] != "nats" || e["nats_url"] != "nats://127.0.0.1:8786" {
		t.Errorf("nats entry %v", e)
	}
	if e := kc["ps"].(map[string]any); e["kind"] != "pubsub" || e["endpoint"] != "127.0.0.1:8681" {
		t.Errorf("pubsub entry %v", e)
	}
	_, err = credentials.Resolve(ctx, m, []any{decl("name", "x", "kind", "gcs", "credential", "pubsub_e2e")}, nil)
	if !errors.Is(err, credentials.ErrInvalid) || !strings.Contains(err.Error(), "declared kind gcs") {
		t.Errorf("kind mismatch: %v", err)
	}
}
