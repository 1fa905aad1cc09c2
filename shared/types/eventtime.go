package types

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventTimeLayout is the wire form of an EventTime: RFC 3339 in UTC with
// exactly three fractional digits ("2026-11-28T10:00:00.120Z"), so that
// texts of one width sort as the times they hold.
const EventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// EventTime is an event's wall-clock time (Event.Timestamp): a time.Time
// in UTC at millisecond precision. It marshals to EventTimeLayout and
// unmarshals any RFC 3339 text (an empty text or null is the zero time);
// the zero time marshals as "". The methods of time.Time (Before, Sub,
// IsZero, ...) apply to it directly.
type EventTime struct{ time.Time }

// EventTimeOf returns t as an EventTime: in UTC, truncated to the
// millisecond.
func EventTimeOf(t time.Time) EventTime {
	if t.IsZero() {
		return EventTime{}
	}
	return EventTime{t.UTC().Truncate(time.Millisecond)}
}

// String is the wire form (EventTimeLayout), or "" for the zero time.
func (t EventTime) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(EventTimeLayout)
}

// MarshalText writes String.
func (t EventTime) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads RFC 3339 text ("" is the zero time); other text is
// an error naming the text.
func (t *EventTime) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = EventTime{}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("timestamp %q is not an RFC 3339 time (2026-11-28T10:00:00.000Z)", truncateText(string(b), 64))
	}
	*t = EventTimeOf(v)
	return nil
}

// MarshalJSON writes String as a JSON string.
func (t EventTime) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a JSON string as UnmarshalText does; null is the
// zero time.
func (t *EventTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = EventTime{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timestamp must be an RFC 3339 string: %w", err)
	}
	return t.UnmarshalText([]byte(s))
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
