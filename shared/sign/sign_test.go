package sign

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const (
	keyA = "0123456789abcdef0123456789abcdef-key-a"
	keyB = "fedcba9876543210fedcba9876543210-key-b"
)

func mustParse(t *testing.T, s string) *Signer {
	t.Helper()
	sg, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func TestSignVerify(t *testing.T) {
	s := mustParse(t, keyA)
	body := []byte(`{"batch_id":"b1","execution_id":"e1","events":[]}`)
	sig := s.Sign(Batch, body)
	if !strings.HasPrefix(sig, "v1=") || len(sig) != 46 {
		t.Fatalf("signature %q: want v1= and 43 base64url characters", sig)
	}
	if err := s.Verify(Batch, body, sig); err != nil {
		t.Fatalf("own signature refused: %v", err)
	}
	cases := []struct {
		name string
		p    Purpose
		body []byte
		sig  string
		want error
	}{
		{"unsigned", Batch, body, "", ErrUnsigned},
		{"other purpose", Command, body, sig, ErrForged},
		{"body with one more byte", Batch, append(bytes.Clone(body), ' '), sig, ErrForged},
		{"other key", Batch, body, mustParse(t, keyB).Sign(Batch, body), ErrForged},
		{"no version", Batch, body, strings.TrimPrefix(sig, "v1="), ErrForged},
		{"bad base64", Batch, body, "v1=!!!!", ErrForged},
		{"short mac", Batch, body, "v1=AAAA", ErrForged},
		{"too long", Batch, body, "v1=" + strings.Repeat("A", 200), ErrForged},
		{"flipped last char", Batch, body, sig[:len(sig)-1] + map[bool]string{true: "A", false: "B"}[sig[len(sig)-1] != 'A'], ErrForged},
	}
	for _, c := range cases {
		if err := s.Verify(c.p, c.body, c.sig); !errors.Is(err, c.want) || !Rejected(err) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestRotation(t *testing.T) {
	old := mustParse(t, keyA)
	rotated := mustParse(t, keyB+" , "+keyA)
	body := []byte("unit")
	if err := rotated.Verify(Command, body, old.Sign(Command, body)); err != nil {
		t.Fatalf("a message signed with the previous key must verify during rotation: %v", err)
	}
	if err := old.Verify(Command, body, rotated.Sign(Command, body)); !errors.Is(err, ErrForged) {
		t.Fatalf("the new key signs: the old deployment must refuse it, got %v", err)
	}
}

func TestKeys(t *testing.T) {
	for _, bad := range []string{"", " , ", "short"} {
		_, err := Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q) accepted", bad)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) && strings.TrimSpace(bad) != "," {
			t.Errorf("Parse(%q): the error echoes the key: %v", bad, err)
		}
	}
	if _, err := Parse(""); !errors.Is(err, ErrNoKey) {
		t.Errorf("empty key: %v, want ErrNoKey", err)
	}
	var nilSigner *Signer
	if nilSigner.Sign(Batch, []byte("x")) != "" {
		t.Error("a nil Signer must not sign")
	}
	if err := nilSigner.Verify(Batch, []byte("x"), "v1=x"); !errors.Is(err, ErrNoKey) {
		t.Errorf("nil Signer Verify = %v, want ErrNoKey", err)
	}
}

func TestSealOpen(t *testing.T) {
	s := mustParse(t, keyA)
	sealed, err := s.Seal(Workload, []byte(`"hunter2"`))
	if err != nil || !strings.HasPrefix(sealed, "s1.") || strings.Contains(sealed, "hunter2") {
		t.Fatalf("Seal = %q, %v", sealed, err)
	}
	again, _ := s.Seal(Workload, []byte(`"hunter2"`))
	if again == sealed {
		t.Error("two seals of the same value must differ (random nonce)")
	}
	if got, err := s.Open(Workload, sealed); err != nil || string(got) != `"hunter2"` {
		t.Fatalf("Open = %q, %v", got, err)
	}
	rotated := mustParse(t, keyB+","+keyA)
	if got, err := rotated.Open(Workload, sealed); err != nil || string(got) != `"hunter2"` {
		t.Fatalf("a rotated deployment must open values sealed with the previous key: %v", err)
	}
	for name, bad := range map[string]string{
		"other key":     func() string { v, _ := mustParse(t, keyB).Seal(Workload, []byte("x")); return v }(),
		"other purpose": func() string { v, _ := s.Seal(Batch, []byte("x")); return v }(),
		"altered":       alter(sealed),
		"no version":    strings.TrimPrefix(sealed, "s1."),
		"short":         "s1.AAAA",
	} {
		if _, err := s.Open(Workload, bad); !errors.Is(err, ErrSealed) {
			t.Errorf("%s: Open = %v, want ErrSealed", name, err)
		}
	}
}

// A barrier key is derived per barrier and purpose: stable for one key
// and barrier, different for another barrier or signing key, never the
// signing key or a seal key, nil without a key.
func TestBarrierKey(t *testing.T) {
	s, _ := New([]byte(strings.Repeat("k", 32)))
	other, _ := New([]byte(strings.Repeat("o", 32)))
	a, b := s.BarrierKey("exec/unit/0.1.0"), s.BarrierKey("exec/unit/0.2.0")
	if len(a) != 32 || bytes.Equal(a, b) || !bytes.Equal(a, s.BarrierKey("exec/unit/0.1.0")) {
		t.Fatalf("barrier keys: %x %x", a, b)
	}
	if bytes.Equal(a, other.BarrierKey("exec/unit/0.1.0")) || bytes.Equal(a, []byte(strings.Repeat("k", 32))) || bytes.Equal(a, sealKey([]byte(strings.Repeat("k", 32)), Barrier)) {
		t.Fatal("a barrier key equals another key")
	}
	var none *Signer
	if none.BarrierKey("x") != nil || s.BarrierKey("") != nil {
		t.Fatal("no key or no barrier must derive nothing")
	}
}

// alter changes one character in the middle of a sealed value to
// another of the encoding's alphabet (never a separator, never the last
// characters, whose low bits a decoder may ignore): replacing the last
// two with "AA", as this test once did, left one seal in 4,096 as it was.
func alter(sealed string) string {
	b := []byte(sealed)
	for i := len(b) / 2; i < len(b); i++ {
		if b[i] == '.' {
			continue
		}
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	panic("alter: no character to change in " + sealed)
}
