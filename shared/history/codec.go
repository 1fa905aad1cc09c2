// Package history holds the typed payload of every event type of the log
// (the attributes of go-workflows' history package are the model): one Go
// type per payload shape, and the one codec between those types and the
// wire form, types.Event.Payload (a generic JSON object). Writers build the
// typed value and encode it (Encode); readers decode it (Decode); no other
// package reads a payload by its keys, so a writer and a reader cannot
// disagree on a key or on the kind of its value.
//
// The wire form is the event JSON the api returns and the store keeps, and
// it is unchanged by this package: Encode produces exactly the keys (and
// the Go kinds of their values) the writers produced before the payloads
// were typed, omitting the optional keys they omitted. Decode accepts the
// values as they come back from JSON (jsonx: whole numbers int64, other
// numbers float64), Firestore (int64, float64) or memory (int), so that
// Decode then Encode of a recorded payload gives it back (round_trip_test.go).
package history

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Payload is the typed payload of one or more event types (For lists
// which), as writers build it (a value). It is implemented by this
// package's payload types only: the codec's methods are unexported, so
// every wire key is spelt here.
type Payload interface {
	// encode returns the wire form (nil for a payload-less event).
	encode() map[string]any
}

// Attributes is a pointer to a typed payload, as readers fill it.
type Attributes interface {
	Payload
	// decode fills the attributes from the wire form, reporting the first
	// malformed or unknown key to r.
	decode(r *reader)
}

// registry names the attributes type of every engine event type (the
// types.Ev* constants). An event type not listed here (an external event,
// types.EventType.IsExternal) has an opaque payload.
var registry = map[types.EventType]func() Attributes{
	types.EvExecutionRequested:    func() Attributes { return &ExecutionRequested{} },
	types.EvPlaybookStarted:       func() Attributes { return &PlaybookStarted{} },
	types.EvWorkflowStarted:       func() Attributes { return &WorkflowStarted{} },
	types.EvAdmitEvaluated:        func() Attributes { return &AdmitEvaluated{} },
	types.EvStepScheduled:         func() Attributes { return &StepScheduled{} },
	types.EvNextEvaluated:         func() Attributes { return &NextEvaluated{} },
	types.EvWorkflowFinished:      func() Attributes { return &WorkflowFinished{} },
	types.EvPlaybookFinished:      func() Attributes { return &PlaybookFinished{} },
	types.EvStepStarted:           func() Attributes { return &StepStarted{} },
	types.EvTaskStarted:           func() Attributes { return &TaskStarted{} },
	types.EvTaskAttemptStarted:    func() Attributes { return &TaskAttemptStarted{} },
	types.EvTaskAttemptDone:       func() Attributes { return &TaskAttempt{} },
	types.EvTaskAttemptFailed:     func() Attributes { return &TaskAttempt{} },
	types.EvPolicyTaskEvaluated:   func() Attributes { return &PolicyTaskEvaluated{} },
	types.EvTaskDone:              func() Attributes { return &TaskDone{} },
	types.EvTaskFailed:            func() Attributes { return &TaskFailed{} },
	types.EvTaskCanceled:          func() Attributes { return &TaskCanceled{} },
	types.EvStepDone:              func() Attributes { return &StepDone{} },
	types.EvStepFailed:            func() Attributes { return &StepFailed{} },
	types.EvLoopStarted:           func() Attributes { return &LoopStarted{} },
	types.EvLoopIterationStarted:  func() Attributes { return &IterationStarted{} },
	types.EvLoopIterationDone:     func() Attributes { return &IterationDone{} },
	types.EvLoopIterationFailed:   func() Attributes { return &IterationFailed{} },
	types.EvLoopDone:              func() Attributes { return &LoopDone{} },
	types.EvResultStored:          func() Attributes { return &ResultStored{} },
	types.EvResultLost:            func() Attributes { return &ResultLost{} },
	types.EvResultRepaired:        func() Attributes { return &ResultRepaired{} },
	types.EvResultRepairFailed:    func() Attributes { return &ResultRepaired{} },
	types.EvCancelRequested:       func() Attributes { return &CancelRequested{} },
	types.EvStepCanceled:          func() Attributes { return &StepCanceled{} },
	types.EvStepForced:            func() Attributes { return &StepForced{} },
	types.EvLoopIterationCanceled: func() Attributes { return &IterationCanceled{} },
	types.EvExecutionTimedOut:     func() Attributes { return &ExecutionTimedOut{} },
	types.EvUnitDeadLettered:      func() Attributes { return &UnitDeadLettered{} },
	types.EvUnitReclaimed:         func() Attributes { return &UnitReclaimed{} },
	types.EvUnitHandedOff:         func() Attributes { return &UnitHandedOff{} },
	types.EvCompensationStarted:   func() Attributes { return &CompensationStarted{} },
}

// For returns new zero attributes (a pointer) for the payload of event
// type t, or nil when t is not an engine event type (an external event's
// payload is opaque).
func For(t types.EventType) Attributes {
	if f := registry[t]; f != nil {
		return f()
	}
	return nil
}

// EventTypes returns the engine event types that have attributes, sorted.
func EventTypes() []types.EventType {
	out := make([]types.EventType, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Encode returns the wire form of p (types.Event.Payload): a new map, or
// nil for a payload-less event (the JSON "payload": null of the log).
func Encode(p Payload) map[string]any {
	if p == nil {
		return nil
	}
	return p.encode()
}

// DecodeInto fills a (a pointer to attributes) from payload, the wire form
// of an event of type t. Every well-formed key is decoded; the error
// names the first key that is malformed (a value of the wrong kind) or
// unknown to a's type, or says that t does not carry a's type.
func DecodeInto(a Attributes, t types.EventType, payload map[string]any) error {
	r := &reader{t: t, m: payload}
	if f := registry[t]; f == nil || reflect.TypeOf(f()) != reflect.TypeOf(a) {
		r.fail("history: %s does not carry %T", t, a)
	}
	a.decode(r)
	r.unknown()
	return r.err
}

// Decode returns the attributes T of ev's payload (see DecodeInto: on an
// error the value holds every key that decoded).
func Decode[T any, P interface {
	*T
	Attributes
}](ev types.Event) (T, error) {
	var v T
	err := DecodeInto(P(&v), ev.EventType, ev.Payload)
	return v, err
}

// reader decodes the keys of one payload, remembering the first error
// and the keys read (unknown keys are an error).
type reader struct {
	t    types.EventType
	m    map[string]any
	seen map[string]bool
	err  error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// get returns the value of key k and whether it is present.
func (r *reader) get(k string) (any, bool) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[k] = true
	v, ok := r.m[k]
	return v, ok
}

func (r *reader) bad(k, want string, v any) {
	r.fail("history: %s payload %q: want %s, got %T", r.t, k, want, v)
}

// unknown reports the first key (in sorted order) no decode read.
func (r *reader) unknown() {
	var extra []string
	for k := range r.m {
		if !r.seen[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		r.fail("history: %s payload: unknown key(s) %s", r.t, strings.Join(extra, ", "))
	}
}

// has reports whether key k is present.
func (r *reader) has(k string) bool {
	_, ok := r.get(k)
	return ok
}

// value returns key k's value as it is (nil when absent).
func (r *reader) value(k string) any {
	v, _ := r.get(k)
	return v
}

// str returns key k as a string ("" when absent or null).
func (r *reader) str(k string) string {
	v, ok := r.get(k)
	if !ok || v == nil {
		return ""
	}
	switch s := v.(type) {
	case string:
		return s
	case types.Status:
		return string(s)
	}
	r.bad(k, "a string", v)
	return ""
}

// boolean returns key k as a bool (false when absent or null).
func (r *reader) boolean(k string) bool {
	v, ok := r.get(k)
	if !ok || v == nil {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.bad(k, "a boolean", v)
	}
	return b
}

// integer returns key k as an int64 (0 when absent or null): any Go
// integer, or a whole float64 or json.Number.
func (r *reader) integer(k string) int64 {
	v, ok := r.get(k)
	if !ok || v == nil {
		return 0
	}
	n, isInt := asInt(v)
	if !isInt {
		r.bad(k, "an integer", v)
	}
	return n
}

// intp returns key k as an int, nil when absent.
func (r *reader) intp(k string) *int {
	if _, ok := r.m[k]; !ok {
		r.get(k)
		return nil
	}
	n := int(r.integer(k))
	return &n
}

// number returns key k as a float64 (0 when absent or null).
func (r *reader) number(k string) float64 {
	v, ok := r.get(k)
	if !ok || v == nil {
		return 0
	}
	f, isNum := asFloat(v)
	if !isNum {
		r.bad(k, "a number", v)
	}
	return f
}

// numberp returns key k as a float64, nil when absent.
func (r *reader) numberp(k string) *float64 {
	if _, ok := r.m[k]; !ok {
		r.get(k)
		return nil
	}
	f := r.number(k)
	return &f
}

// object returns key k as a JSON object (nil when absent or null).
func (r *reader) object(k string) map[string]any {
	v, ok := r.get(k)
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.bad(k, "an object", v)
	}
	return m
}

// strings returns key k as a list of strings (nil when absent or null,
// empty when the list is).
func (r *reader) strings(k string) []string {
	v, ok := r.get(k)
	if !ok || v == nil {
		return nil
	}
	switch l := v.(type) {
	case []string:
		return append([]string{}, l...)
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, isStr := x.(string)
			if !isStr {
				r.bad(k, "a list of strings", x)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	r.bad(k, "a list", v)
	return nil
}

// list returns key k as a list (nil when absent or null).
func (r *reader) list(k string) []any {
	v, ok := r.get(k)
	if !ok || v == nil {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		r.bad(k, "a list", v)
	}
	return l
}

// into decodes key k's value into ptr through its JSON form (a struct
// such as LoopProfile, whether the value is that struct, a pointer to it
// or its decoded JSON object); it reports whether k was present and not
// null.
func (r *reader) into(k string, ptr any) bool {
	v, ok := r.get(k)
	if !ok || v == nil {
		return false
	}
	if rv := reflect.ValueOf(v); rv.Type() == reflect.TypeOf(ptr) {
		reflect.ValueOf(ptr).Elem().Set(rv.Elem())
		return true
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, ptr)
	}
	if err != nil {
		r.fail("history: %s payload %q: %v", r.t, k, err)
		return false
	}
	return true
}

// asInt reads a payload number as an int64 by the engine's one number
// rule (jsonx.Number: any Go integer, json.Number), accepting a whole
// float64 (a number that crossed a JSON reader keeping doubles).
func asInt(v any) (int64, bool) {
	n, _ := jsonx.Number(v)
	switch x := n.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	}
	return 0, false
}

// asFloat reads a payload number as a float64 by jsonx.Number's rule.
func asFloat(v any) (float64, bool) {
	n, _ := jsonx.Number(v)
	switch x := n.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// strList is the wire form of a list of names ([]any of strings, never
// nil: the JSON [] of the log).
func strList(l []string) []any {
	out := make([]any, 0, len(l))
	for _, s := range l {
		out = append(out, s)
	}
	return out
}
