package subscribe

import (
	"time"

	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
)

// TestDecodePush: the push body as Pub/Sub (and the emulator) send it,
// with the ids under camelCase or snake_case names; anything else is a
// permanent error.
func TestDecodePush(t *testing.T) {
	data := base64.StdEncoding.EncodeToString([]byte(`{"seq": 1}`))
	m, sub, err := DecodePush([]byte(`{"message": {"data": "` + data + `", "attributes": {"x-idempotency-key": "cr-1"}, "messageId": "7", "publishTime": "2026-01-02T03:04:05Z", "orderingKey": "k"}, "subscription": "projects/p/subscriptions/s", "deliveryAttempt": 3}`))
	if err != nil || m.ID != "7" || string(m.Data) != `{"seq": 1}` || m.Attributes["x-idempotency-key"] != "cr-1" || !m.PublishTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) ||
		m.OrderingKey != "k" || m.DeliveryAttempt != 3 || sub != "projects/p/subscriptions/s" {
		t.Fatalf("DecodePush = %+v, %q, %v", m, sub, err)
	}
	m, _, err = DecodePush([]byte(`{"subscription":"projects\/p\/subscriptions\/s","message":{"publish_time":"2026-01-02T03:04:05Z","data":"","message_id":"8"}}`))
	if err != nil || m.ID != "8" || !m.PublishTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || len(m.Data) != 0 {
		t.Fatalf("snake_case ids: %+v, %v", m, err)
	}
	// A publish time that is not RFC 3339 is unknown (zero), not a refusal.
	m, _, err = DecodePush([]byte(`{"message":{"publishTime":"yesterday","data":"","messageId":"9"}}`))
	if err != nil || m.ID != "9" || !m.PublishTime.IsZero() {
		t.Fatalf("unparsable publishTime: %+v, %v", m, err)
	}
	for _, bad := range []string{`not json`, `{"message": {"data": "%%%", "messageId": "1"}}`, `{"message": {"data": ""}}`} {
		if _, _, err := DecodePush([]byte(bad)); !errs.Is(err, errs.InvalidArgument) {
			t.Errorf("DecodePush(%s) = %v; want a permanent error", bad, err)
		}
	}
}

// TestRoutes: the function's own health and 404 answers (no backend
// needed).
func TestRoutes(t *testing.T) {
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/healthz", 200, `"ok":true`},
		{"GET", "/", 200, `"ok":true`},
		{"GET", "/push/x", 404, "no route for GET /push/x"},
		{"POST", "/nope", 404, "no route for POST /nope"},
	} {
		w := httptest.NewRecorder()
		Subscribe(w, httptest.NewRequest(c.method, c.path, strings.NewReader("")))
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.body) || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %s", c.method, c.path, w.Code, w.Body.String())
		}
	}
}
