package results

import "testing"

func TestParseReadCheck(t *testing.T) {
	for in, want := range map[string]ReadCheck{"": ReadCheckCRC32C, "CRC32C": ReadCheckCRC32C, "crc32c": ReadCheckCRC32C, "SHA256": ReadCheckSHA256, "sha256": ReadCheckSHA256} {
		if got, err := ParseReadCheck(in); err != nil || got != want {
			t.Errorf("ParseReadCheck(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"md5", "none", "crc32"} {
		if _, err := ParseReadCheck(in); err == nil {
			t.Errorf("ParseReadCheck(%q): no error", in)
		}
	}
}
