package engine

import (
	"encoding/json"

	"github.com/noetl/gcpengine/shared/types"
)

// ProfileBuckets is the number of time buckets of a LoopProfile.
const ProfileBuckets = 60

// LoopProfile is when a loop run's iterations ended, in ProfileBuckets
// equal time buckets: the density an operator sees without reading one
// record per iteration (a 100,000-iteration loop's records are 100,000
// documents). It is computed once, from the iteration records the loop's
// completion reads anyway (ProfileOf), travels in loop.done's payload
// ("profile") and is kept in the step's LoopStatus.
type LoopProfile struct {
	// FirstUS and LastUS are the earliest and latest iteration end, as
	// the records' clocks (hybrid logical clocks: microseconds since the
	// Unix epoch, types.HLC).
	FirstUS int64 `json:"first_us"`
	LastUS  int64 `json:"last_us"`
	// Ended counts the iterations that ended in each bucket; bucket i
	// covers [FirstUS + i·w, FirstUS + (i+1)·w) with w = (LastUS −
	// FirstUS + 1) / len(Ended). Failed counts those that ended in error
	// (nil when none did).
	Ended  []int `json:"ended"`
	Failed []int `json:"failed,omitempty"`
}

// ProfileOf builds the profile of a loop run's iteration records (nil
// when there are none or none has a clock).
func ProfileOf(recs []IterationRecord) *LoopProfile {
	p := &LoopProfile{}
	for _, r := range recs {
		if r.Clock <= 0 {
			continue
		}
		if p.FirstUS == 0 || r.Clock < p.FirstUS {
			p.FirstUS = r.Clock
		}
		p.LastUS = max(p.LastUS, r.Clock)
	}
	if p.FirstUS == 0 {
		return nil
	}
	p.Ended = make([]int, ProfileBuckets)
	span := p.LastUS - p.FirstUS + 1
	for _, r := range recs {
		if r.Clock <= 0 {
			continue
		}
		i := int((r.Clock - p.FirstUS) * ProfileBuckets / span)
		p.Ended[i]++
		if r.Status != types.StatusOK {
			if p.Failed == nil {
				p.Failed = make([]int, ProfileBuckets)
			}
			p.Failed[i]++
		}
	}
	return p
}

// profileFrom reads a loop.done payload's profile: a *LoopProfile when the
// event was built in this process, its JSON form when it was decoded
// (nil when absent or malformed: a profile is an aid, never an error).
func profileFrom(v any) *LoopProfile {
	switch x := v.(type) {
	case nil:
		return nil
	case *LoopProfile:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var p LoopProfile
	if json.Unmarshal(b, &p) != nil || len(p.Ended) == 0 {
		return nil
	}
	return &p
}
