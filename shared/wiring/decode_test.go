package wiring

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

func testSigner(t testing.TB) *sign.Signer {
	s, err := sign.Parse("test-signing-key-0123456789abcdef0123456789")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pushEvent(t testing.TB, msg PushMessage) event.Event {
	e := event.New()
	e.SetID("1")
	e.SetSource("//pubsub")
	e.SetType("google.cloud.pubsub.topic.v1.messagePublished")
	b, _ := json.Marshal(map[string]any{"message": msg, "subscription": "projects/p/subscriptions/route"})
	if err := e.SetData("application/json", b); err != nil {
		t.Fatal(err)
	}
	return e
}

func stepDone() types.Batch {
	ev := types.NewEvent(types.EvStepDone, "e1", "execute", time.Unix(0, 0), "x")
	ev.Step, ev.StepRun = "start", 1
	ev.Payload = map[string]any{"result": 1}
	return types.Batch{ID: "b1", ExecutionID: "e1", Source: "execute", Route: true, Events: []types.Event{ev}}
}

// What the engine publishes (bus.EncodeBatch with the deployment's key)
// decodes; a batch that is unsigned, signed with another key, signed for
// another purpose, or altered after signing is refused as permanent
// (acked and dead-lettered, never applied or projected).
func TestDecodeBatchVerifiesSignature(t *testing.T) {
	s := testSigner(t)
	msgs, err := bus.EncodeBatch(meter.New(), s, stepDone(), nil)
	if err != nil || len(msgs) != 1 {
		t.Fatal(err)
	}
	good := PushMessage{Data: msgs[0].Data, Attributes: msgs[0].Attributes, MessageID: "m1"}
	pm, err := DecodePush(pushEvent(t, good))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBatch(pm, s)
	if err != nil || b.ID != "b1" || len(b.Events) != 1 {
		t.Fatalf("signed batch refused: %v", err)
	}
	other, _ := sign.Parse("another-deployment-key-0123456789abcdef0123")
	forged := func(mod func(*PushMessage)) PushMessage {
		m := PushMessage{Data: append([]byte(nil), good.Data...), Attributes: map[string]string{}}
		for k, v := range good.Attributes {
			m.Attributes[k] = v
		}
		mod(&m)
		return m
	}
	cases := map[string]PushMessage{
		"unsigned":      forged(func(m *PushMessage) { delete(m.Attributes, sign.Attribute) }),
		"other key":     forged(func(m *PushMessage) { m.Attributes[sign.Attribute] = other.Sign(sign.Batch, m.Data) }),
		"as a command":  forged(func(m *PushMessage) { m.Attributes[sign.Attribute] = s.Sign(sign.Command, m.Data) }),
		"result edited": forged(func(m *PushMessage) { m.Data = []byte(string(m.Data[:len(m.Data)-1]) + " }") }),
	}
	for name, m := range cases {
		_, err := DecodeBatch(m, s)
		if err == nil || !IsPermanent(err) || !sign.Rejected(err) {
			t.Errorf("%s: DecodeBatch = %v, want a permanent signature refusal", name, err)
		}
	}
	if _, err := DecodeBatch(good, nil); !errors.Is(err, sign.ErrNoKey) {
		t.Errorf("without a key nothing verifies, got %v", err)
	}
}

// Commands on the commands topic are verified the same way (dispatch
// would otherwise turn a forged one into a signed Cloud Task).
func TestDecodeCommandVerifiesSignature(t *testing.T) {
	s := testSigner(t)
	cmd := types.Command{ID: "c", Kind: types.CmdRunStep, ExecutionID: "e1", Step: "start", StepRun: 1, Attempt: 1, Args: map[string]any{"n": 1}}
	e, err := bus.EncodeCommand(s, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCommand(e.Data, e.Attributes[sign.Attribute], s)
	if err != nil || got.Step != "start" || got.Args["n"] != int64(1) {
		t.Fatalf("signed command: %+v, %v", got, err)
	}
	for name, c := range map[string]struct {
		body []byte
		sig  string
	}{
		"unsigned":      {e.Data, ""},
		"args replaced": {[]byte(`{"id":"c","kind":"run_step","execution_id":"e1","step":"start","args":{"n":2}}`), e.Attributes[sign.Attribute]},
		"batch sig":     {e.Data, s.Sign(sign.Batch, e.Data)},
	} {
		if _, err := DecodeCommand(c.body, c.sig, s); err == nil || !IsPermanent(err) || !sign.Rejected(err) {
			t.Errorf("%s: %v, want a permanent signature refusal", name, err)
		}
	}
	empty := []byte(`{"id":"c"}`)
	if _, err := DecodeCommand(empty, s.Sign(sign.Command, empty), s); err == nil || sign.Rejected(err) || !IsPermanent(err) {
		t.Errorf("signed command without execution/step: %v, want permanent", err)
	}
}

func TestDLQPayloadRedactedAndBounded(t *testing.T) {
	p := DLQPayload([]byte(`{"args":{"password":"hunter2-secret","url":"https://x/?api_key=abcdef123"}}`))
	if strings.Contains(p, "hunter2") || strings.Contains(p, "abcdef123") {
		t.Errorf("payload not redacted: %s", p)
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 0xe4 // not UTF-8 on its own
	}
	if n := len(DLQPayload(append([]byte("中"), long...))); n > 2048 {
		t.Errorf("payload %d bytes, want at most 2048", n)
	}
}
