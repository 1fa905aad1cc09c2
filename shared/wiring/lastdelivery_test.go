package wiring

import (
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/google/uuid"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
)

func TestLastDelivery(t *testing.T) {
	for _, c := range []struct {
		attempt, max int
		want         bool
	}{
		{0, 10, false}, // unknown attempt (no dead-letter policy)
		{1, 10, false},
		{9, 10, false},
		{10, 10, true},
		{11, 10, true}, // a policy lowered while the message was in flight
		{5, 0, false},  // no limit configured
	} {
		if got := LastDelivery(PushMessage{DeliveryAttempt: c.attempt}, c.max); got != c.want {
			t.Errorf("LastDelivery(attempt %d, max %d) = %v, want %v", c.attempt, c.max, got, c.want)
		}
	}
}

// The delivery attempt of the push body decodes with the message; a
// negative one counts as unknown.
func TestDecodePushDeliveryAttempt(t *testing.T) {
	for data, want := range map[string]int{
		`{"message": {"data": "eA==", "messageId": "1"}, "subscription": "projects/p/subscriptions/route", "deliveryAttempt": 7}`:  7,
		`{"message": {"data": "eA==", "messageId": "1"}, "subscription": "projects/p/subscriptions/route"}`:                        0,
		`{"message": {"data": "eA==", "messageId": "1"}, "subscription": "projects/p/subscriptions/route", "deliveryAttempt": -3}`: 0,
	} {
		e := pushEvent(t, PushMessage{})
		if err := e.SetData("application/json", []byte(data)); err != nil {
			t.Fatal(err)
		}
		msg, err := DecodePush(e)
		if err != nil || msg.DeliveryAttempt != want || string(msg.Data) != "x" {
			t.Errorf("DecodePush(%s) = attempt %d data %q err %v, want attempt %d", data, msg.DeliveryAttempt, msg.Data, err, want)
		}
	}
}

// AckPermanent asks for redelivery of a transient failure until the last
// delivery the dead-letter policy allows, which it files in the DLQ
// (Attempts = the delivery's attempt) and acks; a permanent failure is
// filed at once. Needs the Firestore emulator (the DLQ).
func TestAckPermanentFilesTheLastDelivery(t *testing.T) {
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but FIRESTORE_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("Firestore emulator not configured (run scripts/up and source .stack/env)")
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	if project == "" {
		project = "noetl-test"
	}
	st, err := firestorestore.OpenFirestore(t.Context(), project)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := &Deps{Store: st, Log: slog.New(slog.DiscardHandler),
		Cfg: config.Config{PushMaxDeliveryAttempts: 5, EventsTopic: "events", CommandsTopic: "commands"}}
	transient := errors.New("firestore unavailable")

	id := "m-" + uuid.NewString()
	msg := PushMessage{Data: []byte(`{"batch_id":"b"}`), MessageID: id, Attributes: map[string]string{"execution_id": "e"}}
	for attempt := 1; attempt < 5; attempt++ {
		msg.DeliveryAttempt = attempt
		if err := d.AckPermanent(t.Context(), "materialize", msg, "e", "", transient); !errors.Is(err, transient) {
			t.Fatalf("attempt %d: AckPermanent = %v, want the transient error back (redelivery)", attempt, err)
		}
		if _, err := st.DLQGet(t.Context(), "materialize-"+id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("attempt %d: a DLQ entry exists before the last delivery (%v)", attempt, err)
		}
	}
	msg.DeliveryAttempt = 5
	if err := d.AckPermanent(t.Context(), "materialize", msg, "e", "", transient); err != nil {
		t.Fatalf("last delivery: AckPermanent = %v, want nil (filed and acked)", err)
	}
	e, err := st.DLQGet(t.Context(), "materialize-"+id)
	if err != nil {
		t.Fatalf("last delivery: no DLQ entry: %v", err)
	}
	if e.Attempts != 5 || e.Source != "materialize" || e.Kind != "message" || e.Topic != "events" || e.Unit == "" {
		t.Errorf("DLQ entry %+v: want 5 attempts, source materialize, a replayable message of topic events", e)
	}

	// Without a known attempt (no dead-letter policy) nothing is filed.
	msg = PushMessage{Data: []byte(`{}`), MessageID: "m-" + uuid.NewString()}
	if err := d.AckPermanent(t.Context(), "dispatch", msg, "", "", transient); !errors.Is(err, transient) {
		t.Errorf("unknown attempt: AckPermanent = %v, want the transient error", err)
	}
	// A permanent failure is filed on its first delivery.
	msg.DeliveryAttempt = 1
	if err := d.AckPermanent(t.Context(), "dispatch", msg, "", "", Permanent(errors.New("bad command"))); err != nil {
		t.Errorf("permanent: AckPermanent = %v, want nil", err)
	}
	if e, err := st.DLQGet(t.Context(), "dispatch-"+msg.MessageID); err != nil || e.Topic != "commands" || e.Attempts != 1 {
		t.Errorf("permanent: DLQ entry %+v, %v", e, err)
	}
}
