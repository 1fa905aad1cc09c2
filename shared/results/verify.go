package results

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Verified is what Store.Verify read of an object.
type Verified struct {
	// Ref is the reference as parsed.
	Ref Ref
	// Bytes is how many bytes were read and checked.
	Bytes int64
	// Check is the digest compared ("" when the reference records none:
	// only the generation was checked).
	Check ReadCheck
	// Repaired reports that a repaired object stood in for the generation
	// the reference records (MetaRepairs).
	Repaired bool
}

// Verify reads the whole object a reference names, exactly as a read
// would open it (its generation, or a repair of it: openRef), and checks
// its bytes against the reference's digest: check ("" is the Store's
// ReadCheck; a repaired object is checked against the sha256 whatever
// check says). It decodes nothing and loads no value, and it checks no
// ownership: it is the control plane's scrub (shared/operations/gc), run by
// admins. Errors: ErrBadRef; ErrLost wrapped with ErrGeneration (replaced),
// ErrNotFound (gone) or ErrDigest (changed bytes); the backend's.
func (s *Store) Verify(ctx context.Context, v any, check ReadCheck) (Verified, error) {
	ref, err := s.ParseRef(v)
	if err != nil {
		return Verified{}, err
	}
	out := Verified{Ref: ref}
	o, repaired, err := s.openRef(ctx, ref)
	if err != nil {
		return out, err
	}
	out.Repaired = repaired
	vs := *s
	if check != "" {
		vs.ReadCheck = check
	}
	vf := vs.verifierOf(ref, repaired)
	out.Check = vf.kind
	r, err := o.NewReader(ctx, 0, -1)
	if err != nil {
		return out, lostOr(ref, err)
	}
	defer r.Close()
	buf := getChunk()
	defer putChunk(buf)
	n, err := io.CopyBuffer(vf, r, (*buf)[:cap(*buf)])
	out.Bytes = n
	if err != nil {
		return out, lostOr(ref, err)
	}
	if ref.Bytes > 0 && n != ref.Bytes && vf.kind == "" {
		return out, fmt.Errorf("%w: reference %s: %w: it records %d bytes, the object has %d", ErrLost, ref.Name(), ErrDigest, ref.Bytes, n)
	}
	return out, vf.check()
}

// LostKind names how a lost result was lost, from a read's error:
// "replaced" (ErrGeneration), "changed" (ErrDigest), "undecodable"
// (ErrFormat), "gone" (ErrNotFound), "" for an error that is not a loss.
func LostKind(err error) string {
	switch {
	case !errors.Is(err, ErrLost):
		return ""
	case errors.Is(err, ErrGeneration):
		return "replaced"
	case errors.Is(err, ErrDigest):
		return "changed"
	case errors.Is(err, ErrFormat):
		return "undecodable"
	case errors.Is(err, ErrNotFound):
		return "gone"
	}
	return "lost"
}

// Restore puts the object from names (a reference: the re-derived result
// of a repair, shared/operations/gc) at lost's key as a repair of lost's
// generation (MetaRepairs), when its bytes are lost's: the same sha256,
// checked as they are copied. An object already at the key (what replaced
// the lost one) is deleted first, unless it is lost's own generation (then
// nothing is lost: ErrExists). The copy is created only where nothing is
// (IfAbsent); lost's ttl expiry is kept. It returns the new object's
// generation. Errors: ErrBadRef for a reference without a sha256 or a
// generation (nothing to match or to stand in for); ErrDigest (wrapped)
// when the bytes differ (the copy is aborted: nothing is written);
// ErrExists; the backend's.
func (s *Store) Restore(ctx context.Context, lost, from any) (int64, error) {
	lr, err := s.ParseRef(lost)
	if err != nil {
		return 0, err
	}
	if lr.SHA256 == "" || lr.Generation <= 0 {
		return 0, fmt.Errorf("%w: %s: a repair needs the reference's sha256 and generation", ErrBadRef, lr.Name())
	}
	fr, err := s.ParseRef(from)
	if err != nil {
		return 0, err
	}
	src, err := s.backendFor(fr.Cell).Open(ctx, fr.Key, fr.Generation)
	if err != nil {
		return 0, lostOr(fr, err)
	}
	b := s.backendFor(lr.Cell)
	cur, err := b.Open(ctx, lr.Key, 0)
	switch {
	case err == nil && cur.Generation() == lr.Generation:
		return 0, fmt.Errorf("results: restore %s: %w (its generation %d is there)", lr.Name(), ErrExists, lr.Generation)
	case err == nil:
		if err := b.Delete(ctx, lr.Key); err != nil {
			return 0, err
		}
	case !errors.Is(err, ErrNotFound):
		return 0, err
	}
	meta := map[string]string{MetaRepairs: strconv.FormatInt(lr.Generation, 10)}
	if e, ok := src.Attrs().Metadata[MetaExpires]; ok {
		meta[MetaExpires] = e
	}
	w := b.NewWriter(ctx, lr.Key, ObjectAttrs{ContentType: src.Attrs().ContentType, Metadata: meta, IfAbsent: true})
	r, err := src.NewReader(ctx, 0, -1)
	if err != nil {
		w.Abort()
		return 0, lostOr(fr, err)
	}
	defer r.Close()
	h := sha256.New()
	buf := getChunk()
	defer putChunk(buf)
	if _, err := io.CopyBuffer(io.MultiWriter(w, h), r, (*buf)[:cap(*buf)]); err != nil {
		w.Abort()
		return 0, fmt.Errorf("results: restore %s: %w", lr.Name(), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(lr.SHA256) {
		w.Abort()
		return 0, fmt.Errorf("results: restore %s: %w: it records sha256 %s, the copy's is %s", lr.Name(), ErrDigest, lr.SHA256, got)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("results: restore %s: %w", lr.Name(), err)
	}
	return w.Generation(), nil
}
