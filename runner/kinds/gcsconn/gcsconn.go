// Package gcsconn builds Google Cloud Storage clients for the tool kinds
// that read or write objects (gcs, the python/postgres `script:` gcs
// source), from the connection fields of a gcs credential (shared/
// credentials KindGCS) or from the process defaults.
package gcsconn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/egress"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"google.golang.org/api/option"
)

// Clients caches one storage client per distinct connection. The zero
// value is ready to use; it is safe for concurrent use. Close releases the
// clients.
type Clients struct {
	// Egress is the network policy of the clients' connections (the
	// runner's); nil: none (tests).
	Egress *egress.Policy

	mu      sync.Mutex
	clients map[string]*storage.Client
}

// Client returns the client for fields (nil or empty: the process default,
// which honours STORAGE_EMULATOR_HOST and Application Default
// Credentials):
//
//	endpoint              fake-gcs-server (or any JSON API) base URL, e.g.
//	                      http://127.0.0.1:8683 or host:port; no
//	                      authentication is sent
//	service_account_json  a service account key (object or JSON text)
//	credentials_json      the same
//	project | project_id  informational (buckets are named explicitly)
//
// Errors name the bad field; they never contain key material.
func (c *Clients) Client(ctx context.Context, fields map[string]any) (*storage.Client, error) {
	var opts []option.ClientOption
	key := "default"
	if ep, _ := fields["endpoint"].(string); strings.TrimSpace(ep) != "" {
		base := strings.TrimRight(strings.TrimSpace(ep), "/")
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		if !strings.HasSuffix(base, "/storage/v1") {
			base += "/storage/v1"
		}
		// JSON API reads: an emulator serves no XML API host.
		opts = append(opts, option.WithEndpoint(base+"/"), option.WithoutAuthentication(), storage.WithJSONReads())
		if c.Egress != nil {
			// No authentication: the policy's client is the transport.
			opts = append(opts, option.WithHTTPClient(c.Egress.Client()))
		}
		key = "endpoint:" + base
	} else if sa := firstPresent(fields, "service_account_json", "credentials_json"); sa != nil {
		var raw []byte
		switch x := sa.(type) {
		case string:
			raw = []byte(x)
		case map[string]any:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("service_account_json cannot be encoded: %v", err)
			}
			raw = b
		default:
			return nil, fmt.Errorf("service_account_json must be an object or JSON text, got %T", sa)
		}
		var probe map[string]any
		if json.Unmarshal(raw, &probe) != nil {
			return nil, fmt.Errorf("service_account_json is not valid JSON")
		}
		sum := sha256.Sum256(raw)
		key = "sa:" + hex.EncodeToString(sum[:])
		// Only service account keys are accepted (the recommended
		// validation for credential JSON from a store).
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, raw))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	cl, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("storage client: %v", err)
	}
	if c.clients == nil {
		c.clients = map[string]*storage.Client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// Close closes every cached client.
func (c *Clients) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		_ = cl.Close()
	}
	c.clients = nil
}

func firstPresent(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil && v != "" {
			return v
		}
	}
	return nil
}

// ParseURI splits gs://bucket/object.
func ParseURI(uri string) (bucket, object string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(uri), "gs://")
	if !ok {
		return "", "", fmt.Errorf("%q is not a gs://bucket/object URI", uri)
	}
	bucket, object, found := strings.Cut(rest, "/")
	if !found || bucket == "" || object == "" {
		return "", "", fmt.Errorf("%q is not a gs://bucket/object URI", uri)
	}
	return bucket, object, nil
}
