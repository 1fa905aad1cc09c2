package results

// The two digests of an object and the check of every read (which one
// reads check by default: docs/security.md "Why the crc32c is the default").
//
// Every reference records two digests of its object's bytes, both taken
// as the bytes are written (objectOut), and the object's generation:
//
//   - "crc32c", the CRC-32C (Castagnoli) Cloud Storage itself keeps for
//     every object and checks end to end (uploads are refused when it
//     does not match, and the JSON API's reads can be checked against
//     it), in its JSON API's encoding (base64 of the four big-endian
//     bytes): what a read checks by default (ReadCheckCRC32C);
//   - "sha256", the object's identity: what a second writer of the key
//     compares (once.go), what a repair must reproduce byte for byte
//     (shared/operations/gc repair.go), what a read of a repaired object
//     checks (MetaRepairs), and what reads check under ReadCheckSHA256;
//   - "generation", the object written: reads open exactly it (openRef),
//     so an object replaced after its reference was made is refused
//     before a byte is read (ErrGeneration).
//
// What the CRC-32C check gives up, and why it is enough: objects are
// written once (ObjectAttrs.IfAbsent) and only the control plane may
// delete or write them outside a task's own result, and a read opens the
// generation that was written; so the bytes read can differ from the
// bytes written only by a storage or transfer fault, a truncation or a
// bug, which the CRC-32C detects (every burst of up to 32 bits, any other
// change but for 1 in 2^32). A change crafted to keep the CRC needs the
// right to replace the object, and a replaced object is another
// generation. It runs in hardware at over 10 GB/s against about 1.2 GB/s
// for the sha256 on one core of the machine this was measured on, where
// sha256-checked reads ran at 0.38 of arrow-go's own IPC read and
// CRC-checked ones at 1.06-1.52 (scripts/bench results: read_ratio_vs_ipc
// with the default check, read_ratio_vs_ipc_sha256). The daily scrub
// (shared/operations/gc scrub.go, `noetl results verify`) reads every
// referenced object against its digests.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"
)

// castagnoli is the CRC32C table (Cloud Storage's object checksum).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32CKey is the reference field holding the object's CRC-32C
// (Castagnoli polynomial), base64 of its four big-endian bytes: the
// encoding of Cloud Storage's object metadata "crc32c", so a reference can
// be compared with what `gcloud storage objects describe` prints.
const CRC32CKey = "crc32c"

// ReadCheck is which of a reference's digests a read of its object
// checks (Store.ReadCheck; NOETL_RESULT_READ_CHECK).
type ReadCheck string

const (
	// ReadCheckCRC32C checks the reference's "crc32c" (the default); a
	// reference without one (written before it was recorded) is checked
	// against its "sha256".
	ReadCheckCRC32C ReadCheck = "crc32c"
	// ReadCheckSHA256 checks the reference's "sha256" on every read; a
	// reference that records only a "crc32c" is checked against it.
	ReadCheckSHA256 ReadCheck = "sha256"
)

// ReadChecks are the valid ReadCheck values, the default first.
var ReadChecks = []string{string(ReadCheckCRC32C), string(ReadCheckSHA256)}

// ParseReadCheck reads a ReadCheck by name ("" is ReadCheckCRC32C).
// Errors: any other name.
func ParseReadCheck(s string) (ReadCheck, error) {
	switch ReadCheck(strings.ToLower(s)) {
	case "", ReadCheckCRC32C:
		return ReadCheckCRC32C, nil
	case ReadCheckSHA256:
		return ReadCheckSHA256, nil
	}
	return "", fmt.Errorf("results: read check %q is not one of %s", s, strings.Join(ReadChecks, ", "))
}

// encodeCRC32C is a CRC-32C as references (and Cloud Storage) write it.
func encodeCRC32C(sum uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], sum)
	return base64.StdEncoding.EncodeToString(b[:])
}

// validCRC32C reports whether s is a CRC32CKey value.
func validCRC32C(s string) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	return err == nil && len(b) == 4
}

// digests hashes what is written to it into both of a reference's
// digests.
type digests struct {
	sha hash.Hash
	crc hash.Hash32
}

func newDigests() *digests {
	return &digests{sha: sha256.New(), crc: crc32.New(castagnoli)}
}

// Write implements io.Writer (it never fails).
func (d *digests) Write(p []byte) (int, error) {
	d.sha.Write(p)
	d.crc.Write(p)
	return len(p), nil
}

func (d *digests) sha256Hex() string { return hex.EncodeToString(d.sha.Sum(nil)) }
func (d *digests) crc32c() string    { return encodeCRC32C(d.crc.Sum32()) }

// verifier hashes an object's bytes as a read streams them and checks them
// against the reference's digest its Store's ReadCheck picks (nothing
// when the reference records none). Writes never fail.
type verifier struct {
	ref  Ref
	kind ReadCheck // "" when the reference records no digest
	h    hash.Hash
}

// verifier returns the check of a read of ref's object.
func (s *Store) verifier(ref Ref) *verifier { return s.verifierOf(ref, false) }

// verifierOf returns the check of a read of ref's object; a repaired
// object (openRef) is checked against the reference's sha256 whatever
// ReadCheck says.
func (s *Store) verifierOf(ref Ref, repaired bool) *verifier {
	v := &verifier{ref: ref}
	switch {
	case repaired:
		v.kind, v.h = ReadCheckSHA256, sha256.New()
	case ref.CRC32C != "" && (s.ReadCheck != ReadCheckSHA256 || ref.SHA256 == ""):
		v.kind, v.h = ReadCheckCRC32C, crc32.New(castagnoli)
	case ref.SHA256 != "":
		v.kind, v.h = ReadCheckSHA256, sha256.New()
	}
	return v
}

// Write implements io.Writer.
func (v *verifier) Write(p []byte) (int, error) {
	if v.h != nil {
		v.h.Write(p)
	}
	return len(p), nil
}

// check compares the digest of every byte written with the reference's:
// the one digest check of the tier (Resolve, OpenTable). A mismatch wraps
// ErrLost and ErrDigest, naming the digest compared.
func (v *verifier) check() error {
	var want, got string
	switch v.kind {
	case ReadCheckCRC32C:
		want, got = v.ref.CRC32C, encodeCRC32C(v.h.(hash.Hash32).Sum32())
	case ReadCheckSHA256:
		want, got = strings.ToLower(v.ref.SHA256), hex.EncodeToString(v.h.Sum(nil)) // hex in any case
	default:
		return nil
	}
	if got == want {
		return nil
	}
	return fmt.Errorf("%w: reference %s (object %s): %w: it records %s %s, the object's is %s", ErrLost, v.ref.Name(), v.ref.Key, ErrDigest, v.kind, want, got)
}
