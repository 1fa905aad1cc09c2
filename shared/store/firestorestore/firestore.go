// Package firestorestore is the Cloud Firestore driver of the store
// contract (shared/store): the control plane's production backend, on
// Firestore or its emulator (FIRESTORE_EMULATOR_HOST). Documents:
// executions/{id} with its subcollections (outbox, loops and their
// iterations, lanes and loop_done markers, units and their attempts,
// batches), dlq/{message_id}, playbooks/{path}/versions/{version} and
// subscriptions/{name}. Every read-modify-write of one document is a
// compare-and-set on its update time (cas.go), never a locking
// transaction. It passes the conformance suite (storetest) against the
// emulator.
package firestorestore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
)

// Firestore is the Store backed by Cloud Firestore (or its emulator when
// FIRESTORE_EMULATOR_HOST is set).
type Firestore struct {
	c *firestore.Client
	// Sealer seals the secret-named values of an execution's workload
	// (redact.IsSecretKey: api_token, db.password, ...) in its document:
	// no secret value in any document (README "Security"). Nil writes them
	// as they are; a document with sealed values then fails to read
	// (store.ErrSealed). The engine and the API see the opened values (they are
	// the execution's input).
	Sealer store.Sealer
	// DLQRetention is how long DLQ entries are kept (the expire_at TTL
	// field; NoETL observability spec §8.12 dlq.retention_days); zero
	// means DefaultDLQRetention.
	DLQRetention time.Duration
	// Retention is how long ended executions and their projections are
	// kept (the expire_at TTL field: an execution's record, its batches,
	// outbox, loop and attempt documents; executions.retention_days,
	// NOETL_RETENTION_DAYS, which Terraform also reads); zero means
	// DefaultRetention. The results tier's GC keeps an execution's results
	// exactly as long (shared/operations/gc).
	Retention time.Duration
}

// OpenFirestore connects to the project's default database.
func OpenFirestore(ctx context.Context, project string) (*Firestore, error) {
	c, err := firestore.NewClient(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("store: firestore client: %w", err)
	}
	return &Firestore{c: c}, nil
}

// Client exposes the underlying client (for tests and tooling).
func (f *Firestore) Client() *firestore.Client { return f.c }

// Close implements store.Store.
func (f *Firestore) Close() error { return f.c.Close() }

func (f *Firestore) exec(id string) *firestore.DocumentRef {
	return f.c.Collection("executions").Doc(id)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

// DefaultRetention is the retention of a Firestore driver whose Retention
// is zero (30 days, the default of NOETL_RETENTION_DAYS).
const DefaultRetention = 30 * 24 * time.Hour

// retention is how long the driver keeps ended executions' documents.
func (f *Firestore) retention() time.Duration {
	if f.Retention <= 0 {
		return DefaultRetention
	}
	return f.Retention
}

// DefaultDLQRetention is the DLQ retention of a Firestore driver whose
// DLQRetention is zero (30 days).
const DefaultDLQRetention = 30 * 24 * time.Hour

// dlqExpiry is when a DLQ entry filed now expires.
func (f *Firestore) dlqExpiry() time.Time {
	r := f.DLQRetention
	if r <= 0 {
		r = DefaultDLQRetention
	}
	return time.Now().UTC().Add(r)
}

func count(ctx context.Context, q firestore.Query) (int, error) {
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, err
	}
	switch v := res["n"].(type) {
	case int64:
		return int(v), nil
	case interface{ GetIntegerValue() int64 }:
		return int(v.GetIntegerValue()), nil
	}
	return 0, fmt.Errorf("unexpected count %T", res["n"])
}

type blobDoc struct {
	Data     string     `firestore:"data"`
	ExpireAt *time.Time `firestore:"expire_at,omitempty"`
}

// getBlob reads the blobDoc at ref and decodes its JSON into a new T.
// Errors: ErrNotFound; Firestore's (wrapped with its code, naming what);
// a document that does not decode.
func getBlob[T any](ctx context.Context, ref *firestore.DocumentRef, what string) (*T, error) {
	s, err := ref.Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get "+what)
	}
	var d blobDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	v := new(T)
	if err := jsonx.Unmarshal([]byte(d.Data), v); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", what, err)
	}
	return v, nil
}
