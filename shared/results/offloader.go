package results

import (
	"context"

	"github.com/noetl/gcpengine/shared/types"
)

// Offloader is the results tier as the control plane and the worker use
// it: large values move out of the execution document and come back when
// read. Store implements it in production; controltest.Offloader is the
// in-memory fake; resultstest.OffloaderSuite is the contract both pass.
type Offloader interface {
	// Offload stores v in the tier when its JSON encoding is over the
	// inline budget and returns the reference map to keep instead; nil
	// (and no error) when v stays inline.
	Offload(ctx context.Context, coords types.ResultCoords, v any) (any, error)
	// Resolve returns v with every reference inside it (at any depth)
	// replaced by its stored value; other values are returned as they
	// are. A reference whose object is gone is an error wrapping
	// ErrNotFound (code NotFound).
	Resolve(ctx context.Context, v any) (any, error)
}

// ExtractedOf returns the extracted block Offload puts in the reference of
// v ("extracted": a table's summary, else Extract(v)), for fakes of the
// tier that must give the same references.
func ExtractedOf(v any) map[string]any {
	if t, ok := scanTable(v, nil); ok { // a table with an envelope: Extract(v), as OffloadWith
		return extractTable(t)
	}
	return Extract(v)
}
