// Package codec decodes the JSON values the store's drivers keep inside
// their documents (the contract's package doc: values are stored as JSON
// strings, so that ints stay distinct from floats): a projected event
// batch, an iteration record and a recorded attempt outcome. Both drivers
// store the same JSON, so they decode it with the same code; it is
// internal to the store's packages.
package codec

import (
	"fmt"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Events decodes the events of batch id (a JSON array of types.Event)
// into projected events carrying the batch id and their index in it.
// Errors: JSON that does not decode, naming the batch.
func Events(id string, data []byte) ([]types.Projected, error) {
	var evs []types.Event
	if err := jsonx.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("store: decode batch %s: %w", id, err)
	}
	out := make([]types.Projected, len(evs))
	for i, e := range evs {
		out[i] = types.Projected{Event: e, BatchID: id, Index: i}
	}
	return out, nil
}

// Iteration decodes an ended (or canceled) iteration's record.
// Errors: JSON that does not decode.
func Iteration(data []byte) (*engine.IterationRecord, error) {
	r := &engine.IterationRecord{}
	if err := jsonx.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("store: decode iteration: %w", err)
	}
	return r, nil
}

// Outcome decodes a recorded task attempt's outcome (AttemptPut).
// Errors: JSON that does not decode.
func Outcome(data []byte) (*types.Outcome, error) {
	o := &types.Outcome{}
	if err := jsonx.Unmarshal(data, o); err != nil {
		return nil, fmt.Errorf("store: decode attempt: %w", err)
	}
	return o, nil
}
