package subscribe

import (
	"time"

	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
	sub "github.com/noetl/gcpengine/shared/subscribe"
)

// FuzzSubscribeDecodePush: no request body crashes DecodePush (the body
// of POST /push/{name}). Invariants:
//
//   - a rejected body returns an InvalidArgument (errs.Permanent) error
//     and an empty message and subscription: the handler files it in the
//     DLQ and acks it with 200 "dead_lettered" instead of letting Pub/Sub
//     redeliver it forever;
//   - an accepted body is a JSON object and its message has a non-empty
//     ID (the execution id is derived from it);
//   - what DecodePush returns is what the body said: the message and the
//     subscription, written back as a canonical push body (camelCase ids),
//     decode to the same message and subscription.
//
// Named apart from shared/wiring's FuzzDecodePush so that
// `scripts/fuzz --target FuzzSubscribeDecodePush --time 5m` runs this
// one only. Seeds: testdata/fuzz/FuzzSubscribeDecodePush/ and below.
func FuzzSubscribeDecodePush(f *testing.F) {
	for _, s := range []string{
		`{"message":{"data":"eyJzZXEiOjF9","attributes":{"x-idempotency-key":"cr-1"},"messageId":"7","publishTime":"2026-01-02T03:04:05Z","orderingKey":"k"},"subscription":"projects/p/subscriptions/s","deliveryAttempt":3}`,
		`{"message":{"message_id":"8","publish_time":"2026-01-02T03:04:05Z","data":""}}`,
		`{"message":{"data":"%%%","messageId":"1"}}`, `{"message":{"data":""}}`, `{"message":null}`,
		`{"message":{"messageId":1}}`, `{"message":{"messageId":"1","attributes":{"a":null}}}`,
		`{"message":{"messageId":"1"},"deliveryAttempt":1e400}`, `null`, `[]`, `{`, ``, `not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, pushedBy, err := DecodePush(body)
		if err != nil {
			if !errs.Permanent(err) || !errs.Is(err, errs.InvalidArgument) {
				t.Fatalf("error %v is not permanent (code %v): the handler would not dead-letter the body", err, errs.CodeOf(err))
			}
			if !strings.HasPrefix(err.Error(), "subscribe: ") {
				t.Fatalf("error %q does not name the decoder", err)
			}
			if m.ID != "" || m.Data != nil || m.Attributes != nil || pushedBy != "" {
				t.Fatalf("rejected body returned %+v, %q", m, pushedBy)
			}
			return
		}
		if m.ID == "" {
			t.Fatalf("accepted a message without an id: %+v", m)
		}
		if !json.Valid(body) || !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		again, pushedAgain, err := DecodePush(canonical(t, m, pushedBy))
		if err != nil {
			t.Fatalf("canonical form of %+v rejected: %v", m, err)
		}
		if !sameMessage(m, again) || pushedAgain != pushedBy {
			t.Fatalf("not stable: %+v %q, then %+v %q", m, pushedBy, again, pushedAgain)
		}
	})
}

// canonical writes m and subscription back as a push body with the
// camelCase names Pub/Sub uses.
func canonical(t *testing.T, m sub.Message, subscription string) []byte {
	t.Helper()
	type message struct {
		Data        []byte            `json:"data"`
		Attributes  map[string]string `json:"attributes,omitempty"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime,omitzero"`
		OrderingKey string            `json:"orderingKey,omitempty"`
	}
	b, err := json.Marshal(struct {
		Message         message `json:"message"`
		Subscription    string  `json:"subscription,omitempty"`
		DeliveryAttempt int     `json:"deliveryAttempt,omitempty"`
	}{message{m.Data, m.Attributes, m.ID, m.PublishTime, m.OrderingKey}, subscription, m.DeliveryAttempt})
	if err != nil {
		t.Fatalf("marshal %+v: %v", m, err)
	}
	return b
}

// sameMessage compares two decoded messages; nil and empty data or
// attributes are the same (both mean none).
func sameMessage(a, b sub.Message) bool {
	return a.ID == b.ID && bytes.Equal(a.Data, b.Data) && maps.Equal(a.Attributes, b.Attributes) &&
		a.PublishTime.Equal(b.PublishTime) && a.OrderingKey == b.OrderingKey && a.DeliveryAttempt == b.DeliveryAttempt
}
