package history_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// The recorded events (testdata/events.jsonl) are events of real runs, one
// per event type and payload shape (its set of keys): the api's output on
// the local stack (emulators/e2e with NOETL_E2E_RECORD_EVENTS) and the
// published batches of the in-memory harness (go test ./shared/worker
// ./shared/control/... with NOETL_RECORD_EVENTS) for the shapes only unit
// tests reach. To refresh them:
//
//	NOETL_E2E_RECORD_EVENTS=/tmp/e2e.jsonl NOETL_STACK=1 go test ./emulators/e2e/ -run '...'
//	NOETL_RECORD_EVENTS=/tmp/unit.jsonl go test ./shared/worker/ ./shared/control/...
//	go test ./shared/history -run TestRecordedEvents -update -from /tmp/e2e.jsonl,/tmp/unit.jsonl
var (
	update = flag.Bool("update", false, "rewrite testdata/events.jsonl from the recordings named by -from")
	from   = flag.String("from", "", "comma-separated event recordings (JSON lines) for -update")
)

const recorded = "testdata/events.jsonl"

// synthetic names recorded events that a test built by hand rather than a
// writer of the engine (they carry a subset of a payload's keys): left
// out of the curated data.
var synthetic = map[string]string{
	"bustest":                          "source: bus conformance payloads",
	"c9d4863217d091048e7ea5e5f0b59ad8": "event id: control_test's hand-built playbook.timed_out",
}

// TestRecordedEvents decodes every recorded event's payload into its
// type's attributes and encodes it again: the event (envelope and payload)
// must come back as the api returned it, JSON-equal (byte for byte once
// both sides are in canonical form: a struct value such as loop.done's
// profile is written in field order by its writer and in key order once
// read back from the store). A writer that adds
// a key the attributes do not know, or gives a value another kind, fails
// here (DecodeInto reports unknown and malformed keys).
func TestRecordedEvents(t *testing.T) {
	if *update {
		curate(t, strings.Split(*from, ","))
	}
	lines := readLines(t, recorded)
	seen := map[types.EventType]bool{}
	for i, line := range lines {
		var ev types.Event
		if err := jsonx.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		seen[ev.EventType] = true
		t.Run(string(ev.EventType)+"/"+shape(ev.Payload), func(t *testing.T) {
			a := history.For(ev.EventType)
			if a == nil {
				t.Fatalf("no attributes for %s", ev.EventType)
			}
			if err := history.DecodeInto(a, ev.EventType, ev.Payload); err != nil {
				t.Fatalf("decode: %v\n%s", err, line)
			}
			out := ev
			out.Payload = history.Encode(a)
			if out.Payload == nil && ev.Payload != nil && len(ev.Payload) == 0 {
				// A payload-less event's null payload is an empty object
				// once a redactor has walked it (control's transitions,
				// the api): the same wire value on either side.
				out.Payload = map[string]any{}
			}
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canonical(t, b), canonical(t, line); !bytes.Equal(got, want) {
				t.Fatalf("round trip changed the event:\n got %s\nwant %s", got, want)
			}
		})
	}
	for _, typ := range history.EventTypes() {
		if !seen[typ] && !unrecorded[typ] {
			t.Errorf("no recorded %s event: record one (see the comment above) or list it in unrecorded with the reason", typ)
		}
	}
}

// unrecorded lists the event types no run records yet; their attributes
// are exercised by TestEveryShapeRoundTrips only.
var unrecorded = map[types.EventType]bool{
	// The worker's execution deadline (NOETL_EXECUTION_DEADLINE_S) is
	// reached by no e2e test and no unit test of the worker yet.
	types.EvExecutionTimedOut: true,
}

// canonical is b re-encoded with its objects' keys sorted (numbers as
// jsonx reads them).
func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	v, err := jsonx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// curate rewrites the recorded events from the recordings files: per event
// type and payload shape, the shortest event (engine event types only).
func curate(t *testing.T, files []string) {
	best := map[string][]byte{}
	for _, f := range files {
		if f == "" {
			continue
		}
		for _, line := range readLines(t, f) {
			var ev types.Event
			if err := jsonx.Unmarshal(line, &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if history.For(ev.EventType) == nil || synthetic[ev.Source] != "" || synthetic[ev.EventID] != "" {
				continue
			}
			k := string(ev.EventType) + "/" + shape(ev.Payload)
			if b, ok := best[k]; !ok || len(line) < len(b) {
				best[k] = line
			}
		}
	}
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out bytes.Buffer
	for _, k := range keys {
		out.Write(best[k])
		out.WriteByte('\n')
	}
	if err := os.WriteFile(recorded, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shape names a payload's set of keys ("null" for none, "{}" for an empty
// object).
func shape(p map[string]any) string {
	if p == nil {
		return "null"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "{" + strings.Join(keys, ",") + "}"
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
