// Package grant carries the runner's access to result-tier objects: per-request
// grants issued by the control plane as Cloud Storage V4 signed URLs, one per
// object and method (GET to read an object the task may read, PUT to write the
// task's own result key).
//
// The control plane signs grants with a Signer; the runner, which holds no
// cloud identity, reads and writes through NewBackend, a results.Backend that
// holds exactly its grants. In GCP, Cloud Storage verifies the signatures; on
// the local stack (whose fake-gcs-server does not) a Gateway verifies them and
// serves the objects from a results.Backend.
//
// The signing and verification follow Cloud Storage's V4 signing process
// (https://cloud.google.com/storage/docs/access-control/signing-urls-manually):
// a canonical request (method, path, canonical query without the signature,
// canonical signed headers including host, UNSIGNED-PAYLOAD) hashed with
// SHA-256 into the string to sign
// "GOOG4-RSA-SHA256\n<X-Goog-Date>\n<date>/auto/storage/goog4_request\n<hex digest>",
// signed with RSA PKCS#1 v1.5 SHA-256.
package grant

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/results"
)

// Methods a grant carries.
const (
	// MethodGet grants reading an object (Range GETs).
	MethodGet = "GET"
	// MethodPut grants writing an object (one PUT).
	MethodPut = "PUT"
)

// MaxTTL is the longest a V4 signed URL may live (Cloud Storage's limit:
// X-Goog-Expires ≤ 604800 seconds, 7 days).
const MaxTTL = 7 * 24 * time.Hour

// MetaHeaderPrefix prefixes a custom metadata key in the Cloud Storage XML
// API's request and response headers (x-goog-meta-<key>).
const MetaHeaderPrefix = "x-goog-meta-"

// IfGenerationMatchHeader is the Cloud Storage XML API's precondition
// header; a PUT grant of an object written once (results.ObjectAttrs
// IfAbsent) signs it with "0": the PUT creates the object or fails with
// 412 Precondition Failed.
const IfGenerationMatchHeader = "x-goog-if-generation-match"

// ContentLengthRangeHeader is the Cloud Storage XML API's header that
// bounds a PUT's body ("<min>,<max>" bytes): signed into every PUT grant
// as "0,<max>" (Signer.Write), so the grant holder can store at most max
// bytes — Cloud Storage answers a larger body 400 EntityTooLarge, and so
// does the Gateway.
const ContentLengthRangeHeader = "x-goog-content-length-range"

// Grant is the right to one result object until Expires: a V4 signed URL.
// It is JSON-encoded into the runner's request by the control plane.
type Grant struct {
	// Bucket is the object's bucket.
	Bucket string `json:"bucket"`
	// Key is the object's physical key (results.Locator.PhysicalKey).
	Key string `json:"key"`
	// Method is MethodGet (read) or MethodPut (write).
	Method string `json:"method"`
	// URL is the V4 signed URL (path style: <scheme>://<host>/<bucket>/<key>?X-Goog-…).
	URL string `json:"url"`
	// Headers are the signed headers the request must send verbatim, by
	// lower-case name (PUT: "content-type", "x-goog-meta-<k>" and, for
	// an object written once, IfGenerationMatchHeader "0"); the
	// host header is signed too but is the URL's.
	Headers map[string]string `json:"headers,omitempty"`
	// Expires is when the URL stops being accepted (X-Goog-Date +
	// X-Goog-Expires, to the second).
	Expires time.Time `json:"expires"`
	// MaxBytes is the largest body a PUT grant admits (the signed
	// ContentLengthRangeHeader's max; 0 for a GET): the runner's backend
	// stops a larger write itself, with an error naming the quota.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Signer issues grants (control plane side). The zero value is not usable:
// GoogleAccessID and one of SignBytes or Client are needed.
type Signer struct {
	// GoogleAccessID is the signing service account's email (the
	// credential of X-Goog-Credential; the Gateway's Keys are by it).
	// With Client and SignBytes nil it may be empty: the client's
	// credentials name it (cloud.google.com/go/storage auto-detection).
	GoogleAccessID string
	// SignBytes signs the string to sign: RSA PKCS#1 v1.5 over its
	// SHA-256 digest. nil: Client's bucket handle signs
	// (BucketHandle.SignedURL: a service-account key in the client's
	// credentials, else IAM signBlob as GoogleAccessID).
	SignBytes func([]byte) ([]byte, error)
	// Client is used only when SignBytes is nil.
	Client *storage.Client
	// Hostname is the host (host or host:port) of the URLs: "" is
	// storage.googleapis.com (never STORAGE_EMULATOR_HOST nor the
	// client's endpoint); the local stack: the Gateway's host:port.
	Hostname string
	// Insecure makes the URLs http instead of https (the local stack).
	Insecure bool
	// Now is the clock of Expires (Now()+ttl); nil is time.Now. The
	// library stamps X-Goog-Date with the real clock, so Now may only
	// differ from it by seconds.
	Now func() time.Time
}

// ReadKeyPEM reads an RSA private key from a PEM file (a "RSA PRIVATE KEY"
// PKCS#1 block or a "PRIVATE KEY" PKCS#8 block, as shared/oidc's
// Signer.PrivateKeyPEM writes). Errors name the file and never include
// the key's bytes.
func ReadKeyPEM(pemFile string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(pemFile)
	if err != nil {
		return nil, fmt.Errorf("grant: read key: %w", err)
	}
	return parseKeyPEM(data, pemFile)
}

func parseKeyPEM(data []byte, name string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("grant: key %s: no PEM block", name)
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("grant: key %s: PKCS#1: %w", name, err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("grant: key %s: PKCS#8: %w", name, err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("grant: key %s: a %T, want an RSA key", name, k)
		}
		return rk, nil
	default:
		return nil, fmt.Errorf("grant: key %s: PEM block %q, want RSA PRIVATE KEY or PRIVATE KEY", name, block.Type)
	}
}

// NewKeySigner returns a Signer signing with the RSA private key in pemFile
// (PKCS#1 or PKCS#8 PEM, see ReadKeyPEM) as accessID, for URLs on hostname
// ("" is storage.googleapis.com) over http when insecure.
func NewKeySigner(pemFile, accessID, hostname string, insecure bool) (*Signer, error) {
	if accessID == "" {
		return nil, errors.New("grant: key signer: empty access id")
	}
	key, err := ReadKeyPEM(pemFile)
	if err != nil {
		return nil, err
	}
	return &Signer{GoogleAccessID: accessID, SignBytes: KeySignBytes(key), Hostname: hostname, Insecure: insecure}, nil
}

// KeySignBytes returns a Signer.SignBytes signing with key (RSA PKCS#1 v1.5
// over the SHA-256 digest of its input).
func KeySignBytes(key *rsa.PrivateKey) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		sum := sha256.Sum256(b)
		return rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	}
}

// Read grants GET of gs://bucket/key for ttl (0 < ttl ≤ MaxTTL). The object
// need not exist (a GET then answers 404). Errors: a bad bucket, key or
// ttl, a done ctx, or the signing's.
func (s *Signer) Read(ctx context.Context, bucket, key string, ttl time.Duration) (Grant, error) {
	return s.sign(ctx, MethodGet, bucket, key, nil, ttl)
}

// Write grants one PUT of gs://bucket/key for ttl (0 < ttl ≤ MaxTTL),
// storing attrs: the content type and each metadata entry (as
// x-goog-meta-<k>) become signed headers the PUT must carry verbatim, so
// the writer cannot store others. Metadata keys must be lower-case HTTP
// tokens (the XML API folds header names) and values printable ASCII
// without leading, trailing or repeated spaces (signed header values are
// canonicalized by trimming and folding spaces): an error otherwise. With
// attrs.IfAbsent the PUT also carries IfGenerationMatchHeader "0": it
// creates the object or fails (412) where one is. maxBytes (> 0) bounds
// the object: the PUT carries ContentLengthRangeHeader "0,<maxBytes>",
// signed (a task's quota in the result tier, NOETL_RESULT_MAX_OBJECT_MB).
func (s *Signer) Write(ctx context.Context, bucket, key string, attrs results.ObjectAttrs, maxBytes int64, ttl time.Duration) (Grant, error) {
	if maxBytes <= 0 {
		return Grant{}, fmt.Errorf("grant: write gs://%s/%s: a write grant needs a size bound (got %d bytes)", bucket, key, maxBytes)
	}
	h := map[string]string{ContentLengthRangeHeader: "0," + strconv.FormatInt(maxBytes, 10)}
	if attrs.ContentType != "" {
		if err := checkHeaderValue(attrs.ContentType); err != nil {
			return Grant{}, fmt.Errorf("grant: write gs://%s/%s: content type: %w", bucket, key, err)
		}
		h["content-type"] = attrs.ContentType
	}
	for k, v := range attrs.Metadata {
		if k == "" || k != strings.ToLower(k) || !isToken(k) {
			return Grant{}, fmt.Errorf("grant: write gs://%s/%s: metadata key %q: want a lower-case HTTP token", bucket, key, k)
		}
		if err := checkHeaderValue(v); err != nil {
			return Grant{}, fmt.Errorf("grant: write gs://%s/%s: metadata %q: %w", bucket, key, k, err)
		}
		h[MetaHeaderPrefix+k] = v
	}
	if attrs.IfAbsent {
		h[IfGenerationMatchHeader] = "0"
	}
	g, err := s.sign(ctx, MethodPut, bucket, key, h, ttl)
	g.MaxBytes = maxBytes
	return g, err
}

// checkHeaderValue accepts values that survive the V4 canonicalization
// unchanged: printable ASCII, no leading, trailing or repeated spaces.
func checkHeaderValue(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return fmt.Errorf("value %q: want printable ASCII", v)
		}
	}
	if strings.Join(strings.Fields(v), " ") != v {
		return fmt.Errorf("value %q: leading, trailing or repeated spaces", v)
	}
	return nil
}

// checkObject validates a bucket and object name (Cloud Storage's rules
// that matter to a URL: a bucket without '/', a key of 1–1024 bytes of
// UTF-8 without CR or LF).
func checkObject(bucket, key string) error {
	if bucket == "" || strings.ContainsAny(bucket, "/?#% ") || !utf8.ValidString(bucket) {
		return fmt.Errorf("bad bucket name %q", bucket)
	}
	if key == "" || len(key) > 1024 || !utf8.ValidString(key) || strings.ContainsAny(key, "\r\n") {
		return fmt.Errorf("bad object key %q (want 1–1024 bytes of UTF-8 without CR or LF)", key)
	}
	return nil
}

func (s *Signer) sign(ctx context.Context, method, bucket, key string, headers map[string]string, ttl time.Duration) (Grant, error) {
	name := "gs://" + bucket + "/" + key
	if err := ctx.Err(); err != nil {
		return Grant{}, fmt.Errorf("grant: sign %s %s: %w", method, name, err)
	}
	if err := checkObject(bucket, key); err != nil {
		return Grant{}, fmt.Errorf("grant: sign %s: %w", method, err)
	}
	if ttl <= 0 || ttl > MaxTTL {
		return Grant{}, fmt.Errorf("grant: sign %s %s: ttl %v: want 0 < ttl ≤ %v (the V4 limit)", method, name, ttl, MaxTTL)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	host := s.Hostname
	if host == "" {
		host = "storage.googleapis.com"
	}
	opts := &storage.SignedURLOptions{
		GoogleAccessID: s.GoogleAccessID,
		SignBytes:      s.SignBytes,
		Method:         method,
		Expires:        now().Add(ttl),
		Scheme:         storage.SigningSchemeV4,
		Style:          storage.PathStyle(),
		Hostname:       host,
		Insecure:       s.Insecure,
	}
	for k, v := range headers {
		opts.Headers = append(opts.Headers, k+":"+v)
	}
	var u string
	var err error
	switch {
	case s.SignBytes != nil:
		if s.GoogleAccessID == "" {
			return Grant{}, fmt.Errorf("grant: sign %s %s: empty GoogleAccessID", method, name)
		}
		u, err = storage.SignedURL(bucket, key, opts)
	case s.Client != nil:
		u, err = s.Client.Bucket(bucket).SignedURL(key, opts)
	default:
		return Grant{}, fmt.Errorf("grant: sign %s %s: a Signer needs SignBytes or Client", method, name)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("grant: sign %s %s: %w", method, name, err)
	}
	exp, err := urlExpiry(u)
	if err != nil {
		return Grant{}, fmt.Errorf("grant: sign %s %s: %w", method, name, err)
	}
	g := Grant{Bucket: bucket, Key: key, Method: method, URL: u, Expires: exp}
	if len(headers) > 0 {
		g.Headers = headers
	}
	return g, nil
}

// urlExpiry is X-Goog-Date + X-Goog-Expires of a signed URL.
func urlExpiry(u string) (time.Time, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return time.Time{}, err
	}
	q := pu.Query()
	date, err := time.Parse(iso8601, q.Get("X-Goog-Date"))
	if err != nil {
		return time.Time{}, fmt.Errorf("signed url: X-Goog-Date: %w", err)
	}
	secs, err := strconv.Atoi(q.Get("X-Goog-Expires"))
	if err != nil {
		return time.Time{}, fmt.Errorf("signed url: X-Goog-Expires: %w", err)
	}
	return date.Add(time.Duration(secs) * time.Second), nil
}

// iso8601 is the layout of X-Goog-Date.
const iso8601 = "20060102T150405Z"

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
