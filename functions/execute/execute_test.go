package execute

import (
	"bytes"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/wiring"
)

func signer(t testing.TB) *sign.Signer {
	s, err := sign.Parse("execute-test-key-0123456789abcdef0123456789")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// execute trusts no caller (README "Security"): a posted unit with its own
// args, item, _prev and ctx patch is refused unless the engine signed
// exactly that body; every refusal is permanent (dead-lettered, 200).
func TestDecodeUnit(t *testing.T) {
	s := signer(t)
	body := []byte(`{"id":"u","kind":"run_step","execution_id":"e1","step":"start","step_run":1,"task_index":0,"attempt":1}`)
	cmd, err := DecodeUnit(body, s.Sign(sign.Command, body), s)
	if err != nil || cmd.ExecutionID != "e1" || cmd.Step != "start" {
		t.Fatalf("signed unit refused: %v", err)
	}
	posted := []byte(`{"id":"u","kind":"run_step","execution_id":"e1","step":"start","step_run":1,"args":{"cmd":"rm -rf /"},"prev":{"token":"x"},"ctx_patch":{"admin":true},"item":1}`)
	for name, c := range map[string]struct {
		body []byte
		sig  string
	}{
		"posted without signature":       {posted, ""},
		"posted with a copied signature": {posted, s.Sign(sign.Command, body)},
		"garbage signature":              {posted, "v1=AAAA"},
		"batch signature":                {body, s.Sign(sign.Batch, body)},
	} {
		if _, err := DecodeUnit(c.body, c.sig, s); err == nil || !wiring.IsPermanent(err) || !sign.Rejected(err) {
			t.Errorf("%s: %v, want a permanent signature refusal", name, err)
		}
	}
	huge := append([]byte(`{"execution_id":"e1","step":"s","args":{"x":"`), bytes.Repeat([]byte("a"), MaxBody)...)
	huge = append(huge, `"}}`...)
	if _, err := DecodeUnit(huge, s.Sign(sign.Command, huge), s); err == nil || !wiring.IsPermanent(err) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("body over MaxBody: %v", err)
	}
}

// FuzzDecodeUnit: no body or header crashes execute's decoding; only the
// signer's own signature of a body naming an execution and a step is
// accepted; every error is permanent.
func FuzzDecodeUnit(f *testing.F) {
	s := signer(f)
	for _, d := range []string{
		`{"id":"u","kind":"run_step","execution_id":"e","step":"s","step_run":1}`,
		`{"id":"u","kind":"step_timeout","execution_id":"e","step":"s","not_before":"2025-01-01T00:00:00Z"}`,
		`{"execution_id":"e","step":"s","body_ref":{"key":"bodies/e/x.json","sha256":"ab","bytes":3}}`,
		`{"execution_id":"e","step":"s","iteration":1e99}`, `{"item":`, `null`,
	} {
		f.Add([]byte(d), s.Sign(sign.Command, []byte(d)))
		f.Add([]byte(d), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		cmd, err := DecodeUnit(body, sig, s)
		if err != nil {
			if !wiring.IsPermanent(err) {
				t.Fatalf("non-permanent error %v", err)
			}
			return
		}
		if sig != s.Sign(sign.Command, body) {
			t.Fatal("a body decoded without the signer's signature")
		}
		if cmd.ExecutionID == "" || cmd.Step == "" {
			t.Fatalf("accepted %+v", cmd)
		}
	})
}
