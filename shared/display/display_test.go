package display

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é, 日本":              "plain text, é, 日本",
		"line\n\ttab":                    "line\n\ttab",
		"\x1b[2J\x1b]0;pwned\x07title":   `\u001b[2J\u001b]0;pwned\u0007title`,
		"bell\a cr\r del\x7f":            `bell\u0007 cr\u000d del\u007f`,
		"c1 csi \u009b31m":               `c1 csi \u009b31m`,
		"evil\u202egnp.exe":              `evil\u202egnp.exe`,
		"iso\u2066x\u2069 lrm\u200e":     `iso\u2066x\u2069 lrm\u200e`,
		"bad utf8 \xff\xfe":              `bad utf8 \ufffd\ufffd`,
		"real U+FFFD \ufffd stays as is": "real U+FFFD \ufffd stays as is",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// Inside JSON text the escapes are JSON escapes: the output parses to
// the same value.
func TestEscapeKeepsJSON(t *testing.T) {
	v := map[string]any{"name": "a\u202eb\u009bc", "msg": "x\u2028y"}
	b, _ := json.Marshal(v)
	var back map[string]any
	if err := json.Unmarshal([]byte(Escape(string(b))), &back); err != nil {
		t.Fatal(err)
	}
	if back["name"] != v["name"] || back["msg"] != v["msg"] {
		t.Fatalf("%v != %v", back, v)
	}
	if _, bad := UnsafeIn(Escape(string(b))); bad {
		t.Fatal("escaped text still unsafe")
	}
}

// A character split across writes is escaped whole.
func TestWriterSplitRune(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	s := []byte("ok \u202e end \x1b")
	for _, b := range s {
		if _, err := w.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `ok \u202e end \u001b` {
		t.Fatalf("%q", got)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b[31m\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		if _, bad := UnsafeIn(Escape(s)); bad {
			t.Fatalf("Escape(%q) = %q is unsafe", s, Escape(s))
		}
	})
}
