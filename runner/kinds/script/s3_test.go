package script

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"

	"github.com/noetl/gcpengine/runner/kinds/internal/s3conn"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
)

// TestLoadS3: an s3 script source (NoETL's postgres_s3_example shape:
// script {uri: s3://bucket/key, source: {type: s3, region, auth}}) is read
// from an S3-compatible server with the s3 credential named by
// source.auth; a missing key is not_found; an endpoint the egress policy
// refuses is never dialed.
func TestLoadS3(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket("scripts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	defer srv.Close()
	sql := "CREATE TABLE from_s3 (id int);"
	cl, err := s3conn.Conn{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "s"}.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutObject(context.Background(), "scripts", "sql/create.sql", strings.NewReader(sql), int64(len(sql)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "aws_credential", Kind: "s3",
		Data: map[string]any{"access_key_id": "AKID", "secret_access_key": "s", "endpoint": srv.URL}}); err != nil {
		t.Fatal(err)
	}
	o := Options{Credentials: store}
	cfg := map[string]any{"script": map[string]any{"uri": "s3://scripts/sql/create.sql", "source": map[string]any{"type": "s3", "region": "us-west-2", "auth": "aws_credential"}}}
	code, ok, err := Load(context.Background(), cfg, "postgres task", o)
	if err != nil || !ok || code != sql {
		t.Fatalf("Load = %q, %v, %v", code, ok, err)
	}
	// The type follows from an s3:// uri.
	cfg = map[string]any{"script": map[string]any{"uri": "s3://scripts/sql/create.sql", "source": map[string]any{"auth": "aws_credential"}}}
	if code, _, err := Load(context.Background(), cfg, "postgres task", o); err != nil || code != sql {
		t.Fatalf("Load (type from the uri) = %q, %v", code, err)
	}
	cfg = map[string]any{"script": map[string]any{"uri": "s3://scripts/missing.sql", "source": map[string]any{"type": "s3", "auth": "aws_credential"}}}
	if _, _, err := Load(context.Background(), cfg, "postgres task", o); err == nil || err.(*Error).Outcome.Error.Kind != "not_found" {
		t.Fatalf("missing key: %v", err)
	}
	p, err := egress.New("local", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Egress = p
	cfg = map[string]any{"script": map[string]any{"uri": "s3://scripts/sql/create.sql", "source": map[string]any{"type": "s3", "auth": "aws_credential"}}}
	if _, _, err := Load(context.Background(), cfg, "postgres task", o); err == nil || err.(*Error).Outcome.Error.Kind != "forbidden_address" {
		t.Fatalf("a loopback endpoint the policy does not allow: %v", err)
	}
}
