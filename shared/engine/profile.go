package engine

import (
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// ProfileBuckets is the number of time buckets of a LoopProfile.
const ProfileBuckets = history.ProfileBuckets

// LoopProfile is when a loop run's iterations ended (history.LoopProfile:
// it travels in loop.done's payload).
type LoopProfile = history.LoopProfile

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
