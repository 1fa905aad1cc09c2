// Package s3conn opens S3 clients (minio-go) for the s3 kind and s3
// script sources: AWS S3, or any S3-compatible store — Cloud Storage's XML
// API with HMAC keys (endpoint https://storage.googleapis.com), MinIO, a
// local fake — from an s3 credential's fields (shared/credentials KindS3),
// every connection through the runner's egress policy.
package s3conn

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/tools/creds"
)

// DefaultEndpoint is AWS S3's endpoint (minio-go picks the regional host).
const DefaultEndpoint = "https://s3.amazonaws.com"

// DefaultRegion is the region of a credential and task that name none.
const DefaultRegion = "us-east-1"

// Conn is what a client needs.
type Conn struct {
	// Endpoint is the store's URL (http or https).
	Endpoint string
	// Region is the bucket's region.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken sign requests (none:
	// anonymous requests).
	AccessKeyID, SecretAccessKey, SessionToken string
}

// FromFields reads a Conn from an s3 credential's fields (or a task's
// inline auth mapping); endpoint and region, when not empty, win over the
// fields'.
func FromFields(fields map[string]any, endpoint, region string) (Conn, error) {
	c := Conn{
		Endpoint:        creds.String(fields, "endpoint", "endpoint_url"),
		Region:          creds.String(fields, "region", "aws_region"),
		AccessKeyID:     creds.String(fields, "access_key_id", "aws_access_key_id", "key_id"),
		SecretAccessKey: creds.String(fields, "secret_access_key", "aws_secret_access_key", "secret"),
		SessionToken:    creds.String(fields, "session_token", "aws_session_token"),
	}
	if e := strings.TrimSpace(endpoint); e != "" {
		c.Endpoint = e
	}
	if r := strings.TrimSpace(region); r != "" {
		c.Region = r
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return Conn{}, errors.New("an s3 credential needs access_key_id and secret_access_key together")
	}
	return c, nil
}

// Client opens a client for c; with a policy, every connection goes
// through it (the host is resolved and checked before it is dialed). A
// store other than AWS is addressed path-style (bucket in the path), as
// S3-compatible servers expect.
func (c Conn) Client(p *egress.Policy) (*minio.Client, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("s3 endpoint %q is not an http(s) URL", c.Endpoint)
	}
	var cr *miniocreds.Credentials
	if c.AccessKeyID != "" {
		cr = miniocreds.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	} else {
		cr = miniocreds.New(&miniocreds.Static{}) // anonymous
	}
	// One attempt per request: the task's policy decides retries (README
	// "Tool kinds": a kind never retries).
	opts := &minio.Options{Creds: cr, Secure: u.Scheme == "https", Region: c.Region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1}
	if strings.HasSuffix(u.Hostname(), "amazonaws.com") {
		opts.BucketLookup = minio.BucketLookupAuto
	}
	if p != nil {
		opts.Transport = p.Transport()
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		opts.Transport = t
	}
	return minio.New(u.Host, opts)
}

// ParseURI splits s3://bucket/key.
func ParseURI(uri string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(uri), "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3://bucket/key URI", uri)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q names no bucket (s3://bucket/key)", uri)
	}
	return bucket, key, nil
}
