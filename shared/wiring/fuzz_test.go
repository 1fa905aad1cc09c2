package wiring

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
)

// FuzzDecodePush: no push body crashes DecodePush; its errors are
// permanent.
func FuzzDecodePush(f *testing.F) {
	for _, s := range []string{
		`{"message":{"data":"e30=","attributes":{"route":"1"},"messageId":"1"},"subscription":"projects/p/subscriptions/route"}`,
		`{"message":{"data":"!!"}}`, `{"message":null}`, `[]`, `{`, ``, `{"message":{"attributes":{"a":1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e := event.New()
		e.SetID("1")
		e.SetSource("s")
		e.SetType("t")
		e.DataEncoded = body
		if _, err := DecodePush(e); err != nil && !IsPermanent(err) {
			t.Fatalf("non-permanent error %v", err)
		}
	})
}

// FuzzDecodeBatch: no message crashes DecodeBatch; only data signed with
// the key decodes, and what decodes is a batch whose events all belong
// to it; every error is permanent.
func FuzzDecodeBatch(f *testing.F) {
	s := testSigner(f)
	msgs, err := bus.EncodeBatch(meter.New(), s, stepDone(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msgs[0].Data, true)
	f.Add(msgs[0].Data, false)
	for _, d := range []string{`{"batch_id":"b","execution_id":"e","events":[{"execution_id":"x"}]}`, `{"batch_id":"","execution_id":"e"}`, `{"events":[null]}`, `[`, `null`} {
		f.Add([]byte(d), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, signed bool) {
		m := PushMessage{Data: data, Attributes: map[string]string{}}
		if signed {
			m.Attributes[sign.Attribute] = s.Sign(sign.Batch, data)
		}
		b, err := DecodeBatch(m, s)
		if err != nil {
			if !IsPermanent(err) {
				t.Fatalf("non-permanent error %v", err)
			}
			return
		}
		if !signed {
			t.Fatal("an unsigned batch decoded")
		}
		if b.ID == "" || b.ExecutionID == "" {
			t.Fatalf("batch without ids: %+v", b)
		}
		for _, e := range b.Events {
			if e.ExecutionID != b.ExecutionID {
				t.Fatal("event of another execution accepted")
			}
		}
	})
}

// FuzzDecodeCommand: no body crashes DecodeCommand; only signed bodies
// naming an execution and a step decode; every error is permanent.
func FuzzDecodeCommand(f *testing.F) {
	s := testSigner(f)
	for _, d := range []string{
		`{"id":"c","kind":"run_step","execution_id":"e","step":"s","step_run":1,"iteration":2,"item":{"a":[1,2]},"args":{"x":"y"}}`,
		`{"kind":"lease_check","execution_id":"e","step":"s","unit":{"execution_id":"e","step":"s"}}`,
		`{"execution_id":"e","step":"s","body_ref":{"key":"k","sha256":"00","bytes":1}}`,
		`{"iteration":-1}`, `{`, `[]`,
	} {
		f.Add([]byte(d), true)
		f.Add([]byte(d), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		sig := ""
		if signed {
			sig = s.Sign(sign.Command, body)
		}
		c, err := DecodeCommand(body, sig, s)
		if err != nil {
			if !IsPermanent(err) {
				t.Fatalf("non-permanent error %v", err)
			}
			return
		}
		if !signed || c.ExecutionID == "" || c.Step == "" {
			t.Fatalf("accepted %+v (signed %v)", c, signed)
		}
		_ = c.TaskName()
		_ = c.UnitKey()
	})
}
