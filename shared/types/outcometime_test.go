package types

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestOutcomeMetaStartedAt: outcome.meta.started_at is a time.Time, RFC 3339
// on the wire and text in the template map; the zero time is omitted, and
// the "" an older runner sends decodes as the zero time.
func TestOutcomeMetaStartedAt(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	b, err := json.Marshal(Outcome{Status: StatusOK, Meta: OutcomeMeta{Attempt: 2, DurationMS: 7, StartedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"started_at":"2026-01-02T03:04:05.006Z"`) {
		t.Fatalf("encoded: %s", b)
	}
	var o Outcome
	if err := json.Unmarshal(b, &o); err != nil || !o.Meta.StartedAt.Equal(at) || o.Meta.Attempt != 2 || o.Meta.DurationMS != 7 {
		t.Fatalf("decoded %+v, %v", o.Meta, err)
	}
	if got := o.ToMap()["meta"].(map[string]any)["started_at"]; got != "2026-01-02T03:04:05.006Z" {
		t.Fatalf("template map started_at = %#v", got)
	}
	for _, old := range []string{`{"status":"ok","meta":{"attempt":1,"duration_ms":0,"started_at":""}}`, `{"status":"ok","meta":{"attempt":1}}`} {
		var o Outcome
		if err := json.Unmarshal([]byte(old), &o); err != nil || !o.Meta.StartedAt.IsZero() || o.Meta.Attempt != 1 {
			t.Fatalf("%s: %+v, %v", old, o.Meta, err)
		}
	}
	b, _ = json.Marshal(Outcome{Status: StatusOK})
	if strings.Contains(string(b), "started_at") || strings.Contains(string(b), "0001-01-01") {
		t.Fatalf("zero start written: %s", b)
	}
	if got := (Outcome{}).ToMap()["meta"].(map[string]any)["started_at"]; got != "" {
		t.Fatalf("zero start in the template map = %#v", got)
	}
}
