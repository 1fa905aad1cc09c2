package engine

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

func TestProfileOf(t *testing.T) {
	if ProfileOf(nil) != nil || ProfileOf([]IterationRecord{{Index: 0, Status: types.StatusOK}}) != nil {
		t.Fatal("records without clocks have no profile")
	}
	// 1,000 iterations ending 1 µs apart from clock 5,000; every tenth
	// fails; one record without a clock is left out.
	var recs []IterationRecord
	for i := range 1000 {
		st := types.StatusOK
		if i%10 == 0 {
			st = types.StatusError
		}
		recs = append(recs, IterationRecord{Index: i, Status: st, Clock: int64(5000 + i)})
	}
	recs = append(recs, IterationRecord{Index: 1000, Status: types.StatusOK})
	p := ProfileOf(recs)
	if p.FirstUS != 5000 || p.LastUS != 5999 || len(p.Ended) != ProfileBuckets || len(p.Failed) != ProfileBuckets {
		t.Fatalf("profile %+v", p)
	}
	ended, failed := 0, 0
	for i := range p.Ended {
		ended += p.Ended[i]
		failed += p.Failed[i]
		// 1,000 µs in 60 buckets: 16 or 17 per bucket.
		if p.Ended[i] < 16 || p.Ended[i] > 17 {
			t.Errorf("bucket %d holds %d iterations", i, p.Ended[i])
		}
	}
	if ended != 1000 || failed != 100 {
		t.Errorf("%d ended, %d failed; want 1000, 100", ended, failed)
	}
	// One iteration: everything in the first bucket; none failed: no
	// failed buckets.
	one := ProfileOf([]IterationRecord{{Index: 0, Status: types.StatusOK, Clock: 42}})
	if one.FirstUS != 42 || one.LastUS != 42 || one.Ended[0] != 1 || one.Failed != nil {
		t.Errorf("one iteration: %+v", one)
	}
	b, _ := json.Marshal(p)
	if len(b) > 1024 {
		t.Errorf("a profile is %d bytes of JSON, want under 1 KiB (it lives in the execution document)", len(b))
	}
}

// The profile loop.done carries lands in the step's LoopStatus, whether
// the event was built in process (a *LoopProfile) or decoded (JSON); a
// payload without one, or a malformed one, leaves none.
func TestLoopDoneKeepsProfile(t *testing.T) {
	p := &LoopProfile{FirstUS: 10, LastUS: 20, Ended: []int{3, 2}, Failed: []int{0, 1}}
	var decoded map[string]any
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &decoded)
	for _, c := range []struct {
		name    string
		payload any
		want    *LoopProfile
	}{
		{"in process", p, p},
		{"decoded", decoded, p},
		{"absent", nil, nil},
		{"malformed", "garbage", nil},
		{"empty", map[string]any{"ended": []any{}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := load(t, loop)
			st, out := started(t, e, map[string]any{"items": []any{"a", "b", "c", "d", "e"}, "none": []any{}})
			ev := LoopDoneEvent("ex1", out.Loops[0], map[string]any{"results": []any{1, 2, 3, 4, 5}}, 0, t0)
			if c.payload != nil {
				ev.Payload["profile"] = c.payload
			}
			if _, changed, err := e.Apply(st, ev, t0); err != nil || !changed {
				t.Fatal(changed, err)
			}
			got := st.Steps["start"].Loop.Profile
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("profile %+v, want %+v", got, c.want)
			}
		})
	}
}
