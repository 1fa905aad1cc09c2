package emit

import (
	"testing"
)

// FuzzDecode: no body crashes Decode; every accepted event is external,
// names an execution and carries emit's own source and a derived id; a
// refused body yields no events.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"event_type":"external.webhook","execution_id":"e1","payload":{"a":1}}`,
		`[{"event_type":"external.a","execution_id":"e1"},{"event_type":"external.b","execution_id":"e2","event_id":"x"}]`,
		`{"event_type":"step.done","execution_id":"e1","step":"s","step_run":1}`,
		`{"event_type":"loop.iteration.done","execution_id":"e1","iteration":0}`,
		`[{"event_type":"external.\u00e9","execution_id":"e"}]`,
		` [ ]`, `{`, `null`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, problems := Decode(body, now)
		if len(problems) > 0 && evs != nil {
			t.Fatalf("events returned with problems %v", problems)
		}
		if len(problems) == 0 && len(evs) == 0 {
			t.Fatal("neither events nor problems")
		}
		for _, e := range evs {
			if !e.EventType.IsExternal() || e.ExecutionID == "" || e.Source != "emit" || e.EventID == "" || e.Clock != 0 {
				t.Fatalf("accepted event %+v", e)
			}
		}
	})
}
