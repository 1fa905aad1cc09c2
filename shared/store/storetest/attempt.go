package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// attemptCases: the side-effect barrier (AttemptPut, AttemptGet), the
// lease read (LeaseGet) and the DLQ list by status (DLQList), the calls
// of the contract the other groups do not make.
var attemptCases = []testCase{
	{"FirstRecordWins", testAttemptFirstWins},
	{"NotFoundAndSeparate", testAttemptSeparate},
	{"LeaseGet", testLeaseGet},
	{"DLQListByStatus", testDLQList},
}

// sampleOutcome is a recorded attempt whose result holds numbers of both
// kinds at depth (whole numbers come back int64, others float64).
func sampleOutcome(tag string) types.Outcome {
	return types.Outcome{
		Status: types.StatusOK,
		Result: map[string]any{"tag": tag, "n": int64(3), "f": 1.5, "rows": []any{[]any{int64(1), "a"}, []any{int64(2), "b"}}},
		Meta:   types.OutcomeMeta{Attempt: 2, DurationMS: 41},
		HTTP:   &types.HTTPOutcome{Status: 201, Headers: map[string]string{"content-type": "application/json"}},
	}
}

func getAttempt(ctx context.Context, t *testing.T, s store.Store, id, unit, key string) *types.Outcome {
	t.Helper()
	o, err := s.AttemptGet(ctx, id, unit, key)
	if err != nil {
		t.Fatalf("AttemptGet(%s, %s, %s): %v", id, unit, key, err)
	}
	return o
}

// testAttemptFirstWins: the first record of an attempt's outcome is the
// one kept (a redelivery that ran the side effect again cannot replace
// it), and it round-trips with its numbers' kinds. The execution
// document need not exist.
func testAttemptFirstWins(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	first, second := sampleOutcome("first"), sampleOutcome("second")
	second.Status = types.StatusError
	for _, o := range []types.Outcome{first, second} {
		if err := s.AttemptPut(ctx, id, "fetch.1", "0.1.0", o); err != nil {
			t.Fatalf("AttemptPut(%s): %v", o.Result.(map[string]any)["tag"], err)
		}
	}
	mustEqual(t, "AttemptGet after two puts", &first, getAttempt(ctx, t, s, id, "fetch.1", "0.1.0"))
	expectNoExecution(ctx, t, s, id)
}

// testAttemptSeparate: an attempt never recorded is ErrNotFound; records
// are kept per execution, unit and key.
func testAttemptSeparate(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	if o, err := s.AttemptGet(ctx, id, "fetch.1", "0.1.0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AttemptGet of nothing = %s, %v; want ErrNotFound", dump(o), err)
	}
	coords := []struct{ id, unit, key string }{{id, "fetch.1", "0.1.0"}, {id, "fetch.1", "0.2.0"}, {id, "fetch.2", "0.1.0"}, {id + "-b", "fetch.1", "0.1.0"}}
	for i, c := range coords {
		if err := s.AttemptPut(ctx, c.id, c.unit, c.key, sampleOutcome(string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range coords {
		want := sampleOutcome(string(rune('a' + i)))
		mustEqual(t, "AttemptGet("+c.id+", "+c.unit+", "+c.key+")", &want, getAttempt(ctx, t, s, c.id, c.unit, c.key))
	}
	if o, err := s.AttemptGet(ctx, id, "fetch.2", "0.2.0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AttemptGet of an unrecorded key = %s, %v; want ErrNotFound", dump(o), err)
	}
}

// testLeaseGet: LeaseGet reads a unit's holder and expiry as acquired and
// renewed, and ErrNotFound when the unit holds no lease (never leased, or
// released).
func testLeaseGet(ctx context.Context, t *testing.T, s store.Store) {
	l := newLeaser(t, s, uniqueID(t))
	expect := func(what, holder string, expires time.Time) {
		t.Helper()
		h, exp, err := s.LeaseGet(ctx, l.id, l.unit)
		if err != nil || h != holder || !exp.Equal(expires) {
			t.Fatalf("LeaseGet %s = %q, %v, %v; want %q, %v", what, h, exp, err, holder, expires)
		}
	}
	if h, _, err := s.LeaseGet(ctx, l.id, l.unit); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LeaseGet of a unit never leased = %q, %v; want ErrNotFound", h, err)
	}
	l.expect(ctx, "A", 0, free)
	expect("after acquire", "A", l.t0.Add(leaseTTL))
	l.renew(ctx, "A", 10*time.Second, renewed)
	expect("after renew", "A", l.t0.Add(10*time.Second+leaseTTL))
	l.release(ctx, "A")
	if h, _, err := s.LeaseGet(ctx, l.id, l.unit); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LeaseGet after release = %q, %v; want ErrNotFound", h, err)
	}
}

// testDLQList: DLQList lists entries of one status (or any, ""), most
// recently seen first, at most limit of them. The entries are seen later
// than any earlier run's (the DLQ is shared by every run of the suite on
// one backend), so this run's are the newest.
func testDLQList(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	base := time.Now().UTC().AddDate(900, 0, 0)
	for i, st := range []store.DLQStatus{store.DLQPending, store.DLQPending, store.DLQDiscarded} {
		seen := base.Add(time.Duration(i) * time.Millisecond).UTC()
		e := store.DLQEntry{MessageID: "l" + string(rune('1'+i)) + "-" + id, ExecutionID: id, StepID: "s", Attempts: 1, LastError: "x",
			FirstSeen: seen, LastSeen: seen, Status: st}
		if err := s.DLQPut(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	mine := func(status store.DLQStatus, limit int) string {
		t.Helper()
		es, err := s.DLQList(ctx, status, limit)
		if err != nil {
			t.Fatalf("DLQList(%q, %d): %v", status, limit, err)
		}
		if limit > 0 && len(es) > limit {
			t.Fatalf("DLQList(%q, %d) returned %d entries", status, limit, len(es))
		}
		var out []string
		for _, e := range es {
			if status != "" && e.Status != status {
				t.Errorf("DLQList(%q) returned entry %s of status %q", status, e.MessageID, e.Status)
			}
			if strings.HasSuffix(e.MessageID, "-"+id) {
				out = append(out, strings.TrimSuffix(e.MessageID, "-"+id))
			}
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		status store.DLQStatus
		limit  int
		want   string
	}{
		{"", 2, "l3 l2"},
		{store.DLQPending, 100, "l2 l1"},
		{store.DLQPending, 1, "l2"},
		{store.DLQDiscarded, 0, "l3"},
		{store.DLQReplayed, 0, ""},
	} {
		if got := mine(c.status, c.limit); got != c.want {
			t.Errorf("DLQList(%q, %d) = %q of this run's entries, want %q", c.status, c.limit, got, c.want)
		}
	}
}
