package types

import (
	"strconv"
	"time"
)

// IDEpoch is the epoch of execution ids: 2020-01-01T00:00:00Z in Unix
// milliseconds (shared/launch NewID: an id is the milliseconds since
// IDEpoch << 22 | node << 12 | sequence).
const IDEpoch = 1577836800000

// IDTime returns the time encoded in an execution id: IDEpoch plus the
// id's top 41 bits in milliseconds, in UTC. For an id drawn by
// launch.NewID that is its creation time; for a derived id (a child
// execution's, a subscription start's: launch.DerivedID, a hash) it is a
// time that is a pure function of the id. An id that is not a decimal
// int64 ≥ 0 (hand-made ids in tests) gives IDEpoch. The result depends on
// the id alone (NoETL result storage RFC §4: the physical key is derived, never written
// down).
func IDTime(id string) time.Time {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		return time.UnixMilli(IDEpoch).UTC()
	}
	return time.UnixMilli(IDEpoch + n>>22).UTC()
}
