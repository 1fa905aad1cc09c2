package gcsconn

import (
	"context"
	"strings"
	"testing"
)

func TestParseURI(t *testing.T) {
	b, o, err := ParseURI("gs://bucket/a/b.py")
	if err != nil || b != "bucket" || o != "a/b.py" {
		t.Fatalf("%s %s %v", b, o, err)
	}
	for _, bad := range []string{"bucket/a", "gs://bucket", "gs://bucket/", "gs:///x", "s3://b/x"} {
		if _, _, err := ParseURI(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestClientCache: one client per connection; bad key material is an
// error that does not echo it.
func TestClientCache(t *testing.T) {
	c := &Clients{}
	defer c.Close()
	ctx := context.Background()
	a, err := c.Client(ctx, map[string]any{"endpoint": "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Client(ctx, map[string]any{"endpoint": "http://127.0.0.1:1/"})
	if a != b {
		t.Error("the same endpoint gave two clients")
	}
	if _, err := c.Client(ctx, map[string]any{"service_account_json": "not-json-SECRET"}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("bad key: %v", err)
	}
	if _, err := c.Client(ctx, map[string]any{"service_account_json": 5}); err == nil {
		t.Error("a number accepted as a key")
	}
}
