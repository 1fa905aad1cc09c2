package firestorestore

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/shared/errs"
)

// listDocs reads every document q yields, in its order, decodes each into
// a D (DataTo) and returns what view makes of it (never nil: an empty
// list when q yields nothing). A failed read is wrapped with its code and
// "store: "+what; a decoding or view error is returned as it is.
func listDocs[D, R any](ctx context.Context, q firestore.Query, what string, view func(s *firestore.DocumentSnapshot, d *D) (R, error)) ([]R, error) {
	it := q.Documents(ctx)
	defer it.Stop()
	out := []R{}
	for {
		s, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, errs.Wrap(errs.CodeOf(err), err, "store: "+what)
		}
		var d D
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		r, err := view(s, &d)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
}
