package results

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// Extracted-block budgets (NoETL result storage RFC §5: "a bounded, navigable extracted
// predicate block (≤ ~4 KB)").
const (
	// ExtractedMax is the largest JSON encoding, in bytes, of an extracted
	// block.
	ExtractedMax = 4096
	// ExtractedFirstMax is the largest JSON encoding, in bytes, of the
	// first row copied into a table's extracted block.
	ExtractedFirstMax = 1024
)

// Extract returns the extracted block of a value (NoETL result storage RFC §5 "carried
// inline": what routing may read without fetching the payload). Its JSON encoding is at
// most ExtractedMax (4096) bytes; keys are visited in ascending order, so
// the block is deterministic. By shape of v:
//
//   - table (AsTable): {"rows": N, "columns": [names, ascending], "first":
//     <the first row, scalars normalised to int64/float64/bool/string/nil>}.
//     "first" is left out when its JSON is over ExtractedFirstMax (1 KB) or
//     the block would exceed 4 KB; when even the column names do not fit, the
//     list is cut and "columns_truncated": true is added.
//   - map[string]any: the top-level scalar fields (nil, bool, numbers,
//     strings) with their values, and for each list field k
//     "<k>_count": len (unless the map has its own "<k>_count" field).
//     Non-string entries are added first, then strings; an entry that would
//     take the block over 4 KB is skipped (not truncated). Nested maps are
//     left out.
//   - any other list: {"count": len}.
//   - string: {"length": <bytes>}.
//   - anything else: {}.
//
// Counts and lengths are int64.
func Extract(v any) map[string]any {
	if t, ok := scanTable(v, nil); ok {
		return extractTable(t)
	}
	switch x := v.(type) {
	case map[string]any:
		return extractMap(x)
	case string:
		return map[string]any{"length": int64(len(x))}
	}
	if n, ok := listLen(v); ok {
		return map[string]any{"count": int64(n)}
	}
	return map[string]any{}
}

func extractTable(t table) map[string]any {
	rows := t.rows
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	out := map[string]any{"rows": int64(len(rows))}
	// {"rows":N,"columns":[...]} plus room for "columns_truncated":true.
	size := len(`{"rows":,"columns":[],"columns_truncated":true}`) + len(strconv.Itoa(len(rows)))
	cols := make([]any, 0, len(names))
	for i, k := range names {
		n := jsonLen(k)
		if i > 0 {
			n++
		}
		if size+n > ExtractedMax {
			out["columns_truncated"] = true
			break
		}
		size += n
		cols = append(cols, k)
	}
	out["columns"] = cols
	if _, cut := out["columns_truncated"]; cut {
		return out
	}
	first := make(map[string]any, len(rows[0]))
	for k, v := range rows[0] {
		first[k] = scalarValue(v)
	}
	if b, err := json.Marshal(first); err == nil && len(b) <= ExtractedFirstMax && size+len(`,"first":`)+len(b) <= ExtractedMax {
		out["first"] = first
	}
	return out
}

func extractMap(m map[string]any) map[string]any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := map[string]any{}
	size := 2 // {}
	add := func(k string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		n := jsonLen(k) + 1 + len(b)
		if len(out) > 0 {
			n++
		}
		if size+n > ExtractedMax {
			return
		}
		size += n
		out[k] = v
	}
	for _, k := range keys {
		v := m[k]
		if kind, ok := scalarKind(v); v == nil || (ok && kind != kString) {
			add(k, scalarValue(v))
		} else if n, ok := listLen(v); ok {
			ck := k + "_count"
			if _, own := m[ck]; !own {
				add(ck, int64(n))
			}
		}
	}
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			add(k, s)
		}
	}
	return out
}

// listLen returns the length of a list value ([]any, []map[string]any or any
// other slice/array except []byte, which JSON encodes as a string).
func listLen(v any) (int, bool) {
	switch x := v.(type) {
	case []any:
		return len(x), true
	case []map[string]any:
		return len(x), true
	case []byte, nil:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		return rv.Len(), true
	}
	return 0, false
}

// jsonLen is the length of s's JSON string encoding.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// jsonOver reports whether the JSON encoding of v is certainly longer than
// limit bytes, walking generic JSON values (maps, lists, scalars) and
// stopping as soon as a lower bound of the size passes limit. Other values
// are measured with json.Marshal. false means "maybe not": the caller then
// measures exactly. It errors only when json.Marshal does.
func jsonOver(v any, limit int) (bool, error) {
	n := 0
	var walk func(v any) error
	walk = func(v any) error {
		if n > limit {
			return nil
		}
		switch x := v.(type) {
		case nil:
			n += 4
		case bool:
			n += 4
		case string:
			n += 2 + len(x) // escaping only adds
		case int64:
			n += intLen(x)
		case int:
			n += intLen(int64(x))
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				_, err := json.Marshal(x)
				return err
			}
			n++
		case json.Number:
			n += len(x)
		case map[string]any:
			n += 1 + len(x) // braces, colons, commas: a lower bound
			for k, e := range x {
				n += 3 + len(k) // quotes, comma
				if err := walk(e); err != nil || n > limit {
					return err
				}
			}
		case []any:
			n += 1 + len(x)
			for _, e := range x {
				if err := walk(e); err != nil || n > limit {
					return err
				}
			}
		case []map[string]any:
			n += 1 + len(x)
			for _, e := range x {
				if err := walk(e); err != nil || n > limit {
					return err
				}
			}
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return err
			}
			n += len(b)
		}
		return nil
	}
	if err := walk(v); err != nil {
		return false, err
	}
	return n > limit, nil
}

func intLen(i int64) int {
	if i >= 0 && i < 10 {
		return 1
	}
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}
