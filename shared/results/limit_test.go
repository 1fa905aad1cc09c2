package results

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// OffloadLimit: a negative limit is the Store's budget, 0 stores every
// value, a positive one is that result's own budget.
func TestOffloadLimit(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: coords.ExecutionID})
	s := newTestStore(100)
	cases := []struct {
		v     any
		limit int
		ref   bool
	}{
		{sized(100), -1, false},
		{sized(101), -1, true},
		{sized(20), 0, true},
		{nil, 0, true},
		{sized(101), 200, false},
		{sized(201), 200, true},
	}
	for _, c := range cases {
		ref, err := s.OffloadLimit(ctx, coords, c.v, c.limit)
		if err != nil || IsRef(ref) != c.ref {
			t.Fatalf("OffloadLimit(%d bytes, %d) = %v, %v; want ref %v", len(mustJSON(t, c.v)), c.limit, ref, err, c.ref)
		}
		if ref != nil {
			back, err := s.Resolve(ctx, ref)
			if err != nil || !reflect.DeepEqual(back, jsonRoundTrip(t, c.v)) {
				t.Fatalf("resolve: %v %v", back, err)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonRoundTrip is v as the JSON tier gives it back (jsonx: whole numbers
// int64).
func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := jsonx.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
