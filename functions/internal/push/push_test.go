package push

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

// pushed is the CloudEvent of a push delivery of data with attributes.
func pushed(t *testing.T, id string, attempt int, data []byte, attrs map[string]string) event.Event {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"message":         map[string]any{"data": data, "attributes": attrs, "messageId": id},
		"subscription":    "projects/p/subscriptions/s",
		"deliveryAttempt": attempt,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := event.New()
	if err := e.SetData("application/json", body); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestPreamble: the one preamble of the push functions hands a verified
// body to the handler and maps its outcome to the delivery's fate: a
// forged or undecodable message is acked and filed in the DLQ without
// reaching the handler; a transient error is returned (redelivery) until
// the last delivery, which is filed; a permanent one is filed at once;
// nil acks.
func TestPreamble(t *testing.T) {
	signer, err := sign.New([]byte(strings.Repeat("k", sign.MinKeyLen)))
	if err != nil {
		t.Fatal(err)
	}
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
	u := uuid.NewString() // message ids unique to this run
	deps := &wiring.Deps{Store: st, Signer: signer, Log: slog.New(slog.DiscardHandler),
		Cfg: config.Config{PushMaxDeliveryAttempts: 5, EventsTopic: "events", CommandsTopic: "commands"}}
	get := func(context.Context, wiring.Needs) (*wiring.Deps, error) { return deps, nil }

	var got []types.Batch
	var fail error
	fn := Batches(Function{Name: "route", Get: get}, func(_ context.Context, _ *wiring.Deps, d Delivery[types.Batch]) error {
		got = append(got, d.Body)
		return fail
	})
	data, _ := json.Marshal(types.Batch{ID: "b1", ExecutionID: "e1"})
	good := map[string]string{sign.Attribute: signer.Sign(sign.Batch, data)}
	filed := func(id string) bool {
		_, err := st.DLQGet(t.Context(), "route-"+id)
		return err == nil
	}

	if err := fn(t.Context(), pushed(t, u+"ok", 1, data, good)); err != nil || len(got) != 1 || got[0].ID != "b1" {
		t.Fatalf("signed batch: err %v, handled %v", err, got)
	}
	if err := fn(t.Context(), pushed(t, u+"forged", 1, data, map[string]string{sign.Attribute: "x"})); err != nil || len(got) != 1 || !filed(u+"forged") {
		t.Fatalf("forged batch: err %v, handled %d, filed %v: want acked, not handled, filed", err, len(got), filed(u+"forged"))
	}
	if err := fn(t.Context(), pushed(t, u+"junk", 1, []byte("{"), map[string]string{sign.Attribute: signer.Sign(sign.Batch, []byte("{"))})); err != nil || len(got) != 1 || !filed(u+"junk") {
		t.Fatalf("undecodable batch: err %v, handled %d, filed %v", err, len(got), filed(u+"junk"))
	}
	fail = errors.New("firestore unavailable")
	if err := fn(t.Context(), pushed(t, u+"t", 1, data, good)); !errors.Is(err, fail) || filed(u+"t") {
		t.Fatalf("transient: err %v, filed %v: want the error back (redelivery), not filed", err, filed(u+"t"))
	}
	if err := fn(t.Context(), pushed(t, u+"last", 5, data, good)); err != nil || !filed(u+"last") {
		t.Fatalf("transient on the last delivery: err %v, filed %v: want acked and filed", err, filed(u+"last"))
	}
	fail = wiring.Permanent(errors.New("bad"))
	if err := fn(t.Context(), pushed(t, u+"p", 1, data, good)); err != nil || !filed(u+"p") {
		t.Fatalf("permanent: err %v, filed %v: want acked and filed", err, filed(u+"p"))
	}
	if e, _ := st.DLQGet(t.Context(), "route-"+u+"p"); e == nil || e.Source != "route" || e.ExecutionID != "e1" {
		t.Fatalf("DLQ entry %+v: want source route, execution e1", e)
	}

	// A command is verified with its own purpose: a batch's signature
	// does not pass, and the DLQ entry names the command's step.
	var cmds []types.Command
	cfn := Commands(Function{Name: "dispatch", Get: get}, func(_ context.Context, _ *wiring.Deps, d Delivery[types.Command]) error {
		cmds = append(cmds, d.Body)
		return wiring.Permanent(errors.New("no"))
	})
	cdata, _ := json.Marshal(types.Command{ExecutionID: "e2", Step: "s"})
	if err := cfn(t.Context(), pushed(t, u+"c-batchsig", 1, cdata, map[string]string{sign.Attribute: signer.Sign(sign.Batch, cdata)})); err != nil || len(cmds) != 0 {
		t.Fatalf("command signed as a batch: err %v, handled %d", err, len(cmds))
	}
	if err := cfn(t.Context(), pushed(t, u+"c", 1, cdata, map[string]string{sign.Attribute: signer.Sign(sign.Command, cdata)})); err != nil || len(cmds) != 1 {
		t.Fatalf("signed command: err %v, handled %d", err, len(cmds))
	}
	if e, _ := st.DLQGet(t.Context(), "dispatch-"+u+"c"); e == nil || e.ExecutionID != "e2" || e.StepID != "s" {
		t.Fatalf("DLQ entry %+v: want execution e2, step s", e)
	}
}
