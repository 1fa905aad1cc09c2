package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestStateTimesWire pins the state's timestamps on the wire: time.Time in
// Go, RFC 3339 UTC text in JSON, millisecond precision, zero times omitted;
// a state written before they were typed (text) still decodes.
func TestStateTimesWire(t *testing.T) {
	old := `{"execution_id":"e","status":"running","clock":3,"created_at":"2026-01-02T03:04:05.123Z","started_at":"2026-01-02T03:04:05.200Z",` +
		`"steps":{"a":{"status":"ok","run":1,"runs":1,"started_at":"2026-01-02T03:04:05.300Z","finished_at":"2026-01-02T03:04:06.000Z"}}}`
	var st State
	if err := json.Unmarshal([]byte(old), &st); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC)
	if !st.CreatedAt.Equal(want) || st.StartedAt.Sub(st.CreatedAt) != 77*time.Millisecond || !st.FinishedAt.IsZero() {
		t.Fatalf("decoded times: created %v started %v finished %v", st.CreatedAt, st.StartedAt, st.FinishedAt)
	}
	if a := st.Steps["a"]; a.FinishedAt.Sub(a.StartedAt) != 700*time.Millisecond {
		t.Fatalf("step a: %v .. %v", a.StartedAt, a.FinishedAt)
	}
	b, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, w := range []string{`"created_at":"2026-01-02T03:04:05.123Z"`, `"started_at":"2026-01-02T03:04:05.2Z"`, `"finished_at":"2026-01-02T03:04:06Z"`} {
		if !strings.Contains(s, w) {
			t.Errorf("encoded state lacks %s: %s", w, s)
		}
	}
	if strings.Count(s, `"finished_at"`) != 1 || strings.Contains(s, "0001-01-01") {
		t.Errorf("a zero time is written: %s", s)
	}
	// The engine records UTC, to the millisecond.
	if got := ts(time.Date(2026, 1, 2, 4, 4, 5, 123456789, time.FixedZone("x", 3600))); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("ts = %v, want %v UTC", got, want)
	}
}
