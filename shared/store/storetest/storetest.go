// Package storetest is the conformance suite that every store.Store backend
// must pass (in the manner of google/go-cloud's drivertest and
// riverqueue/river's driver suite): a backend's own test calls Run with a
// constructor, and the suite checks the contract documented on store.Store
// through the interface only.
//
// The suite writes under unique execution ids, catalog paths and DLQ
// message ids (the test name plus a random suffix), never deletes, and runs
// its subtests in parallel, so it can run repeatedly and concurrently
// against one shared emulator or database (or one shared Memory).
//
// Values round-trip through the store as JSON would: an absent map or slice
// and an empty one are treated as equal, but numbers must keep their kind
// (whole numbers come back as int64, others as float64) at any depth,
// including lists of lists.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/store"
)

// opTimeout bounds each subtest, so that an unreachable backend fails the
// run instead of hanging it.
const opTimeout = 2 * time.Minute

// Run runs the conformance suite. newStore is called once per subtest and
// must return a ready store; it owns the store's lifetime (typically it
// registers t.Cleanup(func() { s.Close() })). Groups and subtests call
// t.Parallel, so newStore must be safe for concurrent use.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Execution", executionCases},
		{"Checkpoint", checkpointCases},
		{"Outbox", outboxCases},
		{"Loop", loopCases},
		{"Iteration", iterationCases},
		{"Lane", laneCases},
		{"LoopDone", loopDoneCases},
		{"Lease", leaseCases},
		{"Attempt", attemptCases},
		{"Batch", batchCases},
		{"Playbook", playbookCases},
		{"Subscription", subscriptionCases},
		{"DLQ", dlqCases},
		{"Park", parkCases},
		{"CompleteUnit", unitCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					s := newStore(t)
					if s == nil {
						t.Fatal("storetest: newStore returned nil")
					}
					ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
					defer cancel()
					c.fn(ctx, t, s)
				})
			}
		})
	}
}

// testCase is one subtest of a group.
type testCase struct {
	name string
	fn   func(ctx context.Context, t *testing.T, s store.Store)
}

// uniqueID returns a document-id-safe id unique to this test run: the test
// name (with characters other than [A-Za-z0-9_-] replaced) plus a random
// suffix.
func uniqueID(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 100 {
		name = name[len(name)-100:]
	}
	return name + "-" + strings.ToLower(rand.Text()[:12])
}

// mustEqual fails the test with the first difference between want and got.
func mustEqual(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := firstDiff(what, reflect.ValueOf(want), reflect.ValueOf(got)); d != "" {
		t.Fatalf("%s\nwant: %s\ngot:  %s", d, dump(want), dump(got))
	}
}

// dump renders v as JSON for failure messages (types show in firstDiff).
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	if len(b) > 4000 {
		return string(b[:4000]) + "..."
	}
	return string(b)
}

// firstDiff returns a description of the first place where want and got
// differ, or "" when they are equal. Unlike reflect.DeepEqual it treats a
// nil map or slice as equal to an empty one (JSON storage does not keep the
// distinction), and it names the path and the dynamic types at the
// difference (so int64(3) versus float64(3) is visible).
func firstDiff(path string, want, got reflect.Value) string {
	if !want.IsValid() || !got.IsValid() {
		if want.IsValid() == got.IsValid() {
			return ""
		}
		return fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))
	}
	if want.Type() != got.Type() {
		return fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))
	}
	switch want.Kind() {
	case reflect.Interface, reflect.Pointer:
		if want.IsNil() || got.IsNil() {
			if want.IsNil() == got.IsNil() {
				return ""
			}
			return fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))
		}
		return firstDiff(path, want.Elem(), got.Elem())
	case reflect.Struct:
		if want.Type() == reflect.TypeFor[time.Time]() {
			if !want.Interface().(time.Time).Equal(got.Interface().(time.Time)) {
				return fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))
			}
			return ""
		}
		for i := range want.NumField() {
			f := want.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if d := firstDiff(path+"."+f.Name, want.Field(i), got.Field(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range want.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for _, k := range got.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			k := keys[n]
			wv, gv := want.MapIndex(k), got.MapIndex(k)
			p := fmt.Sprintf("%s[%q]", path, n)
			switch {
			case !wv.IsValid():
				return fmt.Sprintf("%s: unexpected key, got %s", p, show(gv))
			case !gv.IsValid():
				return fmt.Sprintf("%s: missing key, want %s", p, show(wv))
			}
			if d := firstDiff(p, wv, gv); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if want.Len() != got.Len() {
			return fmt.Sprintf("%s: want length %d, got %d (want %s, got %s)", path, want.Len(), got.Len(), show(want), show(got))
		}
		for i := range want.Len() {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), want.Index(i), got.Index(i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want.Interface(), got.Interface()) {
		return fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got))
	}
	return ""
}

// show renders a value with its dynamic type.
func show(v reflect.Value) string {
	if !v.IsValid() {
		return "<absent>"
	}
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "nil"
		}
		v = v.Elem()
	}
	s := fmt.Sprintf("%#v", v.Interface())
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return fmt.Sprintf("%s(%s)", v.Type(), s)
}
