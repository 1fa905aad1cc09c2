// Package conf holds the small helpers the tool kinds share for reading a
// rendered task configuration (tools.Request.Config / Args): typed lookups
// with key aliases, scalar stringification, durations in seconds, and the
// outcome constructors for failures.
package conf

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// Lookup returns the first non-nil value among keys in m.
func Lookup(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v, true
		}
	}
	return nil, false
}

// String returns the first non-nil value among keys, stringified with
// Stringify. Empty strings count as absent.
func String(m map[string]any, keys ...string) (string, bool) {
	v, ok := Lookup(m, keys...)
	if !ok {
		return "", false
	}
	s := Stringify(v)
	return s, s != ""
}

// Map returns v as a map[string]any (map[string]string is converted too).
func Map(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[string]string:
		out := make(map[string]any, len(m))
		for k, s := range m {
			out[k] = s
		}
		return out, true
	}
	return nil, false
}

// Stringify renders a scalar the way a query string or header expects it:
// strings as is, integers in decimal, floats in the shortest form without
// exponent for whole numbers ("2", "0.5"), booleans as "true"/"false", nil as
// "", and maps/lists as compact JSON.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x)
	case float32:
		return formatFloat(float64(x))
	case float64:
		return formatFloat(x)
	case json.Number:
		return x.String()
	case fmt.Stringer:
		return x.String()
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Seconds converts a number of seconds (int, float, json.Number or numeric
// string) to a duration. ok is false when v is not a number; non-positive
// values are returned as is (callers treat them as "unset").
func Seconds(v any) (time.Duration, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	case string:
		g, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = g
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// Fail returns an error outcome (status "error", nil result) with the given
// classification.
func Fail(kind types.ErrorKind, retryable bool, format string, a ...any) types.Outcome {
	return types.Outcome{
		Status: types.StatusError,
		Error:  &types.TaskError{Kind: kind, Message: fmt.Sprintf(format, a...), Retryable: retryable},
	}
}

// FailCode returns an error outcome of the given kind classified by the
// engine's one error taxonomy: retryable when code's policy retries
// (errs.PolicyOf) — a backend's transient failure (Unavailable, Unknown,
// DeadlineExceeded, ...) is, a missing or forbidden resource is not.
func FailCode(code errs.Code, kind types.ErrorKind, format string, a ...any) types.Outcome {
	return Fail(kind, errs.PolicyOf(code).Retry, format, a...)
}

// ConfigError returns the outcome for an invalid task configuration: kind
// "config", code InvalidArgument, so not retryable (the same configuration
// fails again).
func ConfigError(format string, a ...any) types.Outcome {
	return FailCode(errs.InvalidArgument, types.ErrKindConfig, format, a...)
}
