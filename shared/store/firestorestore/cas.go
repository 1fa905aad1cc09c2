package firestorestore

import (
	"context"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
)

// The Firestore driver makes every read-modify-write of one document a
// compare-and-set — a plain read, then a write whose precondition is the
// read's update time (or, for a document that did not exist, a Create) —
// instead of a transaction. A transaction's reads lock their documents
// until it commits or rolls back; a function instance that dies between
// the two (a crash, a kill, a scale-in) leaves those locks behind, and
// every later writer of the document waits on them — up to 60 s idle in
// Firestore, and until the emulator restarts locally (the soak found units
// and executions wedged this way). A compare-and-set holds nothing between
// its read and its write: a writer that dies in between leaves the
// document as it was.

// casAttempts bounds the re-reads of a compare-and-set whose precondition
// failed (another writer changed the document between its read and its
// write).
const casAttempts = 30

// casWrite is what a compare-and-set's decide function asks for: nothing
// (the zero value), a Create (the document did not exist), an Update of
// the listed fields, or a Delete.
type casWrite struct {
	create any
	update []firestore.Update
	del    bool
	// also adds writes of other documents committed in the same request
	// (atomically, under the same precondition): a DLQ entry parked or
	// resolved with an iteration record.
	also func(b *firestore.WriteBatch)
}

// cas reads ref, calls decide with the snapshot (nil when the document
// does not exist) and commits the write it returns under a precondition
// on that read, re-reading and deciding again when the precondition fails
// (at most casAttempts times, with jittered backoff from 2 ms to 100 ms).
// decide's errors are returned as they are; Firestore errors are wrapped
// with their errs code and what.
func (f *Firestore) cas(ctx context.Context, m meter.Scope, ref *firestore.DocumentRef, what string, decide func(s *firestore.DocumentSnapshot) (casWrite, error)) error {
	wait := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		m.Read(1)
		s, err := ref.Get(ctx)
		if err != nil && !isCode(err, codes.NotFound) {
			return errs.Wrap(errs.CodeOf(err), err, what)
		}
		if err != nil || !s.Exists() {
			s = nil
		}
		w, err := decide(s)
		if err != nil {
			return err
		}
		switch {
		case w.create == nil && w.update == nil && !w.del:
			return nil
		case w.also != nil:
			err = f.casBatch(ctx, m, ref, s, w)
		case s == nil && w.create != nil:
			m.Write(1)
			_, err = ref.Create(ctx, w.create)
		case s == nil:
			return nil // nothing to update or delete
		case w.del:
			m.Delete(1)
			_, err = ref.Delete(ctx, firestore.LastUpdateTime(s.UpdateTime))
		default:
			m.Write(1)
			_, err = ref.Update(ctx, w.update, firestore.LastUpdateTime(s.UpdateTime))
		}
		if err == nil {
			return nil
		}
		lost := isCode(err, codes.FailedPrecondition) || isCode(err, codes.AlreadyExists) || isCode(err, codes.NotFound) || isCode(err, codes.Aborted)
		if !lost || attempt >= casAttempts {
			return errs.Wrap(errs.CodeOf(err), err, what)
		}
		if err := sleepCtx(ctx, wait/2+rand.N(wait)); err != nil {
			return errs.Wrap(errs.CodeOf(err), err, what)
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// casBatch commits w's write of ref (under the precondition of the read
// s) with its other writes in one request.
func (f *Firestore) casBatch(ctx context.Context, m meter.Scope, ref *firestore.DocumentRef, s *firestore.DocumentSnapshot, w casWrite) error {
	b := f.c.Batch() //nolint:staticcheck // one request with preconditions (see checkpointOptimistic)
	switch {
	case s == nil && w.create != nil:
		b.Create(ref, w.create)
	case s == nil:
		return nil
	case w.del:
		b.Delete(ref, firestore.LastUpdateTime(s.UpdateTime))
	default:
		b.Update(ref, w.update, firestore.LastUpdateTime(s.UpdateTime))
	}
	w.also(b)
	m.Write(2)
	_, err := b.Commit(ctx)
	return err
}

// sleepCtx sleeps for d or until ctx ends (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
