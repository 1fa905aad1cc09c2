// Package gcsspool is the Cloud Storage driver of subscribe.Bucket, the
// spool's object store (the contract in shared/subscribe; its suite is
// shared/subscribe/subscribetest's BucketSuite).
package gcsspool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/subscribe"
)

// Buckets opens spool buckets on a GCS client (the emulator through
// STORAGE_EMULATOR_HOST on the stack).
func Buckets(c *storage.Client) subscribe.Buckets {
	return func(name string) subscribe.Bucket { return gcsBucket{c.Bucket(name)} }
}

type gcsBucket struct{ b *storage.BucketHandle }

func (g gcsBucket) Put(ctx context.Context, name string, data []byte) error {
	w := g.b.Object(name).NewWriter(ctx)
	w.ContentType = "application/json"
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return fmt.Errorf("subscribe: spool put %s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("subscribe: spool put %s: %w", name, err)
	}
	return nil
}

func (g gcsBucket) Get(ctx context.Context, name string) ([]byte, error) {
	r, err := g.b.Object(name).NewReader(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil, subscribe.ErrNoObject
	}
	if err != nil {
		return nil, fmt.Errorf("subscribe: spool get %s: %w", name, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (g gcsBucket) List(ctx context.Context, prefix string) ([]subscribe.Object, error) {
	it := g.b.Objects(ctx, &storage.Query{Prefix: prefix})
	var out []subscribe.Object
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("subscribe: spool list %s: %w", prefix, err)
		}
		out = append(out, subscribe.Object{Name: a.Name, Size: a.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (g gcsBucket) Delete(ctx context.Context, name string) error {
	err := g.b.Object(name).Delete(ctx)
	if err == nil || errors.Is(err, storage.ErrObjectNotExist) {
		return nil
	}
	return fmt.Errorf("subscribe: spool delete %s: %w", name, err)
}
