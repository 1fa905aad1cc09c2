package subscribe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// Object is one stored object of a Bucket listing.
type Object struct {
	Name string
	Size int64
}

// Bucket is the spool's object store (a GCS bucket): Put overwrites,
// List returns the objects under a prefix sorted by name, Get of a missing
// object is ErrNoObject, Delete of a missing object is not an error.
type Bucket interface {
	Put(ctx context.Context, name string, data []byte) error
	Get(ctx context.Context, name string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]Object, error)
	Delete(ctx context.Context, name string) error
}

// ErrNoObject is Bucket.Get's error for a missing object (code NotFound).
var ErrNoObject = errs.Sentinel(errs.NotFound, "subscribe: no such spool object")

// Buckets opens the Bucket of a bucket name.
type Buckets func(name string) Bucket

// SpoolPrefix is the object prefix of a subscription's spool:
// subscriptions/<name>/spool/ (the conformance README's
// gs://<bucket>/subscriptions/<name>/spool/).
func SpoolPrefix(name string) string { return "subscriptions/" + name + "/spool/" }

// DLQPrefix is the object prefix of a subscription's spool dead letters.
func DLQPrefix(name string) string { return "subscriptions/" + name + "/dlq/" }

// recvSeqWidth is the zero-padded width of the receive sequence in object
// names (a 64-bit number has 20 digits): names sort in receive order.
const recvSeqWidth = 20

// Item is one spooled message (noetl-tools spool/item.rs SpoolItem): the
// message with what replay needs. It is stored as JSON at
// SpoolPrefix(subscription) + ObjectKey() + ".json".
type Item struct {
	// Subscription is the resource name.
	Subscription string `json:"subscription"`
	Source       string `json:"source"`
	MessageID    string `json:"message_id"`
	// IdempotencyKey is the directive's key ("" = none).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// DedupKey is what the execution id is derived from (DedupKey).
	DedupKey string `json:"dedup_key"`
	// RecvSeq orders replay: the receive time in Unix nanoseconds (one
	// sequence across the function's instances).
	RecvSeq uint64 `json:"recv_seq"`
	// OrderingKey is the per-key lane ("" = the global lane).
	OrderingKey string `json:"ordering_key,omitempty"`
	// Downstream is the breaker that was open.
	Downstream string `json:"downstream"`
	// SHA256 is the hex SHA-256 of the message body.
	SHA256 string `json:"sha256"`
	// Attempts counts failed replays.
	Attempts int `json:"attempts"`
	// SpooledAtMS is when it was spooled (Unix ms).
	SpooledAtMS int64 `json:"spooled_at_ms"`
	// Reason is circuit_open, dispatch_failed or draining.
	Reason string `json:"reason"`
	// Message is the Pub/Sub message, replayed as received.
	Message Message `json:"message"`
}

// ObjectKey is the item's name under the spool prefix without ".json":
// the zero-padded RecvSeq, "-", the sanitized message id.
func (it Item) ObjectKey() string {
	return fmt.Sprintf("%0*d-%s", recvSeqWidth, it.RecvSeq, sanitizeKey(it.MessageID))
}

// SpoolRef is the item's noetl://spool/<subscription>/<recv_seq>/<message id>
// reference (logged with its SHA-256).
func (it Item) SpoolRef() string {
	return fmt.Sprintf("noetl://spool/%s/%d/%s", it.Subscription, it.RecvSeq, it.MessageID)
}

func sanitizeKey(s string) string {
	out := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
	if len(out) > 128 {
		out = out[:128]
	}
	return out
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func encodeItem(it Item) ([]byte, error) { return json.Marshal(it) }

func decodeItem(b []byte) (Item, error) {
	var it Item
	if err := json.Unmarshal(b, &it); err != nil {
		return Item{}, fmt.Errorf("subscribe: decode spool item: %w", err)
	}
	return it, nil
}

// nowMS is t in Unix milliseconds.
func nowMS(t time.Time) int64 { return t.UnixMilli() }
