package types

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

// An event's time is written with exactly three fractional digits in UTC
// (texts of one width sort as times), reads any RFC 3339 text, and refuses
// anything else with the text named.
func TestEventTimeWire(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 80_123_456, time.FixedZone("x", 3600))
	ev := Event{EventID: "e", Timestamp: EventTimeOf(at)}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"timestamp":"2026-11-28T09:00:00.080Z"`) {
		t.Fatalf("wire form: %s", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !back.Timestamp.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("round trip: %v %v", back.Timestamp, err)
	}
	for _, in := range []string{`"2026-11-28T10:00:00+01:00"`, `"2026-11-28T09:00:00.0801234Z"`} {
		var v EventTime
		if err := json.Unmarshal([]byte(in), &v); err != nil || v.String() != "2026-11-28T09:00:00.000Z" && v.String() != "2026-11-28T09:00:00.080Z" {
			t.Errorf("%s: %q %v", in, v.String(), err)
		}
	}
	for _, in := range []string{`""`, `null`} {
		var v EventTime = EventTimeOf(at)
		if err := json.Unmarshal([]byte(in), &v); err != nil || !v.IsZero() {
			t.Errorf("%s: want the zero time, got %v %v", in, v, err)
		}
	}
	if b, _ := json.Marshal(EventTime{}); string(b) != `""` {
		t.Errorf("zero time: %s", b)
	}
	var v EventTime
	if err := json.Unmarshal([]byte(`"yesterday"`), &v); err == nil || !strings.Contains(err.Error(), `"yesterday"`) {
		t.Errorf("bad text: %v", err)
	}
	if err := json.Unmarshal([]byte(`12`), &v); err == nil {
		t.Error("a number was read as a time")
	}
	// Texts of one width sort as the times they hold.
	var texts []string
	var times []time.Time
	for _, ms := range []int{999, 5, 120, 0, 10_001} {
		x := at.Add(time.Duration(ms) * time.Millisecond)
		texts = append(texts, EventTimeOf(x).String())
		times = append(times, x)
	}
	sort.Strings(texts)
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := range texts {
		if texts[i] != EventTimeOf(times[i]).String() {
			t.Fatalf("text order %v differs from time order", texts)
		}
	}
}
