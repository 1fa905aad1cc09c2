package sign

import (
	"bytes"
	"testing"
)

// FuzzVerify: no body/signature pair crashes Verify, nothing but the
// Signer's own signature of the exact body and purpose verifies, and a
// signature never verifies for another purpose or a changed body.
func FuzzVerify(f *testing.F) {
	s, err := Parse(keyA)
	if err != nil {
		f.Fatal(err)
	}
	body := []byte(`{"id":"u","kind":"run_step","execution_id":"e","step":"s"}`)
	f.Add(body, s.Sign(Command, body), false)
	f.Add(body, s.Sign(Batch, body), true)
	f.Add([]byte{}, "", false)
	f.Add([]byte("x"), "v1=", true)
	f.Add([]byte("x"), "v1=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", false)
	f.Add([]byte("\x00\xff"), "v2=abc", true)
	f.Fuzz(func(t *testing.T, body []byte, sig string, batch bool) {
		p := Command
		if batch {
			p = Batch
		}
		err := s.Verify(p, body, sig)
		own := s.Sign(p, body)
		if err == nil && sig != own {
			t.Fatalf("a signature other than the signer's own verified: %q (own %q)", sig, own)
		}
		if err != nil && !Rejected(err) {
			t.Fatalf("Verify error %v is not a refusal", err)
		}
		if s.Verify(p, body, own) != nil {
			t.Fatal("own signature refused")
		}
		other := Batch
		if batch {
			other = Command
		}
		if s.Verify(other, body, own) == nil {
			t.Fatal("a signature verified for another purpose")
		}
		if s.Verify(p, append(bytes.Clone(body), 0), own) == nil {
			t.Fatal("a signature verified for a changed body")
		}
	})
}
