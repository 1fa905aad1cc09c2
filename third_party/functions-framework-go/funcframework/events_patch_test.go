package funcframework

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Local patch (PATCHES.md): a raw Pub/Sub push body reaches a CloudEvent
// function with its subscription, delivery attempt and ordering key.
// Without the patch the messagePublished data holds only the message's
// data, attributes, id and publish time. ("pubusb" in @type is upstream's
// spelling, kept.)
func TestConvertRawPushKeepsDeliveryAttempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want string
	}{
		{
			name: "dead-letter policy: delivery attempt and ordering key",
			body: `{"message": {"data": "eyJhIjoxfQ==", "attributes": {"k": "v"}, "messageId": "7", "publishTime": "2026-01-02T03:04:05Z", "orderingKey": "o1"},
				"subscription": "projects/p/subscriptions/route", "deliveryAttempt": 5}`,
			want: `{"message": {"@type": "type.googleapis.com/google.pubusb.v1.PubsubMessage", "data": "eyJhIjoxfQ==", "attributes": {"k": "v"},
				"messageId": "7", "publishTime": "2026-01-02T03:04:05Z", "orderingKey": "o1"},
				"subscription": "projects/p/subscriptions/route", "deliveryAttempt": 5}`,
		},
		{
			name: "no dead-letter policy: no delivery attempt",
			body: `{"message": {"data": "eyJhIjoxfQ==", "messageId": "8", "publishTime": "2026-01-02T03:04:05Z"}, "subscription": "projects/p/subscriptions/plain"}`,
			want: `{"message": {"@type": "type.googleapis.com/google.pubusb.v1.PubsubMessage", "data": "eyJhIjoxfQ==", "attributes": null,
				"messageId": "8", "publishTime": "2026-01-02T03:04:05Z"}, "subscription": "projects/p/subscriptions/plain"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://localhost:8080/projects/p/topics/events", bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if err := convertBackgroundToCloudEventRequest(req); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			var ce struct {
				Type   string          `json:"type"`
				Source string          `json:"source"`
				Data   json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(b, &ce); err != nil {
				t.Fatal(err)
			}
			if ce.Type != "google.cloud.pubsub.topic.v1.messagePublished" || ce.Source != "//pubsub.googleapis.com/projects/p/topics/events" {
				t.Errorf("type %q source %q", ce.Type, ce.Source)
			}
			var got, want map[string]interface{}
			if err := json.Unmarshal(ce.Data, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CloudEvent data mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
