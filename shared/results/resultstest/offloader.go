package resultstest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// OffloaderSuite runs the results.Offloader contract against the tiers
// newOffloader returns (each call a fresh, empty tier whose inline budget
// is inlineMax bytes of JSON): the production Store over a Backend and the
// engine tests' fake (controltest.Offloader) both run it.
//
//   - A value whose JSON fits the budget stays inline: Offload returns nil.
//   - A larger one is stored: Offload returns a reference map
//     {"$ref": {...}, "extracted": ExtractedOf(v)}, and Resolve of the
//     reference gives the value back as JSON would (numbers by the jsonx
//     rule), a fresh copy each time — tables included.
//   - Resolve replaces references at any depth of maps and lists and
//     returns every other value as it is.
//   - Offloading again at the same coordinates overwrites (a redelivered
//     unit); different coordinates do not collide.
//   - A reference whose object is not in the tier resolves to an error
//     wrapping results.ErrNotFound (code NotFound: not retried).
//   - A reference loads only for the context's results.Reader: the
//     execution that stored it, its parent or one of its children;
//     another execution, or no reader at all, gets an error wrapping
//     results.ErrForbidden (code PermissionDenied: not retried).
//   - A done context fails Offload of a large value and Resolve of a
//     reference.
func OffloaderSuite(t *testing.T, newOffloader func(t *testing.T, inlineMax int) results.Offloader) {
	t.Helper()
	const budget = 256
	// Reads are on behalf of the execution the suite writes (results by
	// ownership: Resolve loads only the reader's own, parent's and
	// children's results).
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "offloadertest-" + t.Name()})
	coords := func(step string, attempt int) types.ResultCoords {
		return types.ResultCoords{Tenant: "t", Project: "p", ExecutionID: "offloadertest-" + t.Name(), Step: step, Attempt: attempt}
	}
	big := func(tag string) map[string]any {
		return map[string]any{"tag": tag, "n": 7, "f": 2.5, "list": []any{1, []any{"x", nil}, map[string]any{"k": true}}, "pad": strings.Repeat("p", 2*budget)}
	}
	table := func() []any {
		rows := []any{}
		for i := range 20 {
			rows = append(rows, map[string]any{"id": i, "name": "row-" + strings.Repeat("n", i), "score": float64(i) + 0.5, "ok": i%2 == 0})
		}
		return rows
	}
	offload := func(t *testing.T, o results.Offloader, c types.ResultCoords, v any) map[string]any {
		t.Helper()
		ref, err := o.Offload(ctx, c, v)
		if err != nil {
			t.Fatalf("Offload: %v", err)
		}
		m, ok := ref.(map[string]any)
		if !ok || !results.IsRef(m) {
			t.Fatalf("Offload of a %d-byte value returned %#v, want a reference", size(t, v), ref)
		}
		return m
	}
	resolve := func(t *testing.T, o results.Offloader, v any) any {
		t.Helper()
		got, err := o.Resolve(ctx, v)
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		return got
	}

	t.Run("SmallStaysInline", func(t *testing.T) {
		o := newOffloader(t, budget)
		ref, err := o.Offload(ctx, coords("small", 1), map[string]any{"n": 1})
		if ref != nil || err != nil {
			t.Fatalf("Offload of a small value = %#v, %v; want nil, nil", ref, err)
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		o := newOffloader(t, budget)
		for name, v := range map[string]any{"document": big("doc"), "table": table(), "list": []any{strings.Repeat("s", 2*budget), 1, 2.5}} {
			ref := offload(t, o, coords(name, 1), v)
			if got, want := ref[results.ExtractedKey], any(results.ExtractedOf(v)); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: extracted %#v, want %#v", name, got, want)
			}
			if got, want := resolve(t, o, ref), wire(t, v); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: resolved\n%#v\nwant\n%#v", name, got, want)
			}
		}
	})

	t.Run("ResolveFreshCopies", func(t *testing.T) {
		o := newOffloader(t, budget)
		ref := offload(t, o, coords("copy", 1), big("copy"))
		first := resolve(t, o, ref).(map[string]any)
		first["tag"] = "changed"
		first["list"].([]any)[0] = "changed"
		if got := resolve(t, o, ref); !reflect.DeepEqual(got, wire(t, big("copy"))) {
			t.Fatalf("a second Resolve sees the first one's changes: %#v", got)
		}
	})

	t.Run("ResolveAtAnyDepth", func(t *testing.T) {
		o := newOffloader(t, budget)
		a := offload(t, o, coords("a", 1), big("a"))
		b := offload(t, o, coords("b", 1), table())
		v := map[string]any{"plain": 1, "list": []any{a, map[string]any{"inner": b, "s": "x"}}, "top": a}
		want := map[string]any{"plain": 1, "list": []any{wire(t, big("a")), map[string]any{"inner": wire(t, table()), "s": "x"}}, "top": wire(t, big("a"))}
		if got := resolve(t, o, v); !reflect.DeepEqual(got, want) {
			t.Fatalf("Resolve of nested references =\n%#v\nwant\n%#v", got, want)
		}
		for _, plain := range []any{nil, "s", 3, 2.5, true, []any{1, "x"}, map[string]any{"k": []any{}}} {
			if got := resolve(t, o, plain); !reflect.DeepEqual(got, plain) {
				t.Errorf("Resolve(%#v) = %#v, want it unchanged", plain, got)
			}
		}
	})

	t.Run("Coordinates", func(t *testing.T) {
		o := newOffloader(t, budget)
		first := offload(t, o, coords("s", 1), big("first"))
		other := offload(t, o, coords("s", 2), big("other attempt"))
		again := offload(t, o, coords("s", 1), big("second"))
		if got := resolve(t, o, other); !reflect.DeepEqual(got, wire(t, big("other attempt"))) {
			t.Errorf("another attempt's value: %#v", got)
		}
		if got := resolve(t, o, again); !reflect.DeepEqual(got, wire(t, big("second"))) {
			t.Errorf("after an overwrite at the same coordinates: %#v", got)
		}
		_ = first
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		ref := offload(t, newOffloader(t, budget), coords("gone", 1), big("gone"))
		_, err := newOffloader(t, budget).Resolve(ctx, []any{ref}) // another, empty tier
		if !errors.Is(err, results.ErrNotFound) || !errs.Is(err, errs.NotFound) || errs.Retryable(err) {
			t.Fatalf("Resolve of a reference to a missing object: %v (code %s), want ErrNotFound, not retried", err, errs.CodeOf(err))
		}
	})

	t.Run("Ownership", func(t *testing.T) {
		o := newOffloader(t, budget)
		owner := coords("owned", 1).ExecutionID
		ref := offload(t, o, coords("owned", 1), big("owned"))
		for name, r := range map[string]results.Reader{
			"parent": {Execution: "offloadertest-child", Parent: owner},
			"child":  {Execution: "offloadertest-parent", IsChild: func(_ context.Context, id string) (bool, error) { return id == owner, nil }},
		} {
			if got, err := o.Resolve(results.WithReader(context.Background(), r), ref); err != nil || !reflect.DeepEqual(got, wire(t, big("owned"))) {
				t.Errorf("read by its %s's execution: %v", name, err)
			}
		}
		for name, rctx := range map[string]context.Context{
			"another execution": results.WithReader(context.Background(), results.Reader{Execution: "offloadertest-other"}),
			"no reader":         context.Background(),
		} {
			_, err := o.Resolve(rctx, map[string]any{"nested": []any{ref}})
			if !errors.Is(err, results.ErrForbidden) || !errs.Is(err, errs.PermissionDenied) || errs.Retryable(err) {
				t.Errorf("%s: Resolve = %v (code %s), want ErrForbidden, PermissionDenied, not retried", name, err, errs.CodeOf(err))
			}
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		o := newOffloader(t, budget)
		ref := offload(t, o, coords("c", 1), big("c"))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := o.Offload(cctx, coords("c", 2), big("c")); err == nil {
			t.Error("Offload with a canceled context: no error")
		}
		if _, err := o.Resolve(cctx, ref); err == nil {
			t.Error("Resolve with a canceled context: no error")
		}
	})
}

// wire is v as JSON gives it back (numbers by the jsonx rule).
func wire(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func size(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}
