// Package toolspec declares, once per task kind, the configuration a task
// of that kind reads: one Go struct per kind (the model is river's
// JobArgs: one struct per job kind, both inserted and worked). The same
// struct serves three readers:
//
//   - the validator (shared/dsl) checks a task's keys against it (Check:
//     unknown keys, wrong types, values outside an enumeration, required
//     keys);
//   - the tool (shared/tools/<kind>) decodes its rendered configuration
//     into it (Decode) and reads fields, never keys by string;
//   - the JSON Schema of the DSL takes its tool part from it (Specs and
//     Fields: keys, aliases, types, enumerations, defaults, doc strings).
//
// A field's tags say how it is written in a playbook:
//
//	json:"key,omitempty"   the canonical key (also its JSON name: a spec
//	                       survives the runner's JSON hop as is)
//	alias:"a,b"            NoETL's other spellings of the key; Decode
//	                       reads them as the key (both given is an error)
//	doc:"..."              what the key means (schema descriptions)
//	enum:"x,y"             the literal values allowed (case-insensitive;
//	                       a template is checked at run time)
//	default:"v"            the value the tool uses when the key is absent
//	                       (documentation: the tool applies it)
//	required:"group"       one key of each group must be given (keys of
//	                       the same group are alternatives)
//	ignored:"reason"       accepted for NoETL compatibility but not used
//	                       by this engine: the validator warns with the
//	                       reason
//
// Values are rendered before a tool decodes them (templates are rendered
// at run time by the worker): a field holding a value that may be a
// template at validation time is typed any or string, or Check skips the
// type check of a template string.
//
// This package imports no tool dependency (no DuckDB, no cloud client): the
// validator and the schema generator import it alone.
package toolspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/go-viper/mapstructure/v2"
)

// Spec is one task kind's configuration struct. Kind returns the name
// written in `kind:` (river's JobArgs.Kind).
type Spec interface {
	Kind() string
}

// all lists every kind's zero spec, in the order messages list kinds.
var all = []Spec{
	Noop{}, HTTP{}, Python{}, Postgres{}, Playbook{}, Workbook{}, DuckDB{}, Transfer{}, GCS{}, S3{},
	Secrets{}, NATS{}, Shell{}, Subscription{}, Artifact{}, ResultFetch{},
}

// Specs returns every kind's zero spec by kind name (a new map on every
// call). The values are structs (not pointers); reflect over them, or use
// Fields for the parsed tags.
func Specs() map[string]Spec {
	out := make(map[string]Spec, len(all))
	for _, s := range all {
		out[s.Kind()] = s
	}
	return out
}

// Kinds returns the kind names, in the order messages list them.
func Kinds() []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Kind()
	}
	return out
}

// Field describes one key of a kind's spec (parsed from the struct tags).
type Field struct {
	// Key is the canonical key (the json tag's name).
	Key string
	// Aliases are the other spellings Decode reads as Key.
	Aliases []string
	// GoName is the struct field's name.
	GoName string
	// Type is the struct field's Go type.
	Type reflect.Type
	// Doc describes the key.
	Doc string
	// Enum lists the literal values allowed (nil: any).
	Enum []string
	// Default is the value the tool uses when the key is absent ("" when
	// none is documented).
	Default string
	// Required names the group of alternatives of which one key must be
	// given ("" when the key is optional).
	Required string
	// Ignored is the reason an accepted key is not used ("" when used).
	Ignored string
}

var (
	fieldsMu    sync.Mutex
	fieldsCache = map[reflect.Type][]Field{}
)

// Fields returns the keys of kind's spec in declaration order (nil for an
// unknown kind).
func Fields(kind string) []Field {
	s, ok := Specs()[kind]
	if !ok {
		return nil
	}
	return FieldsOf(s)
}

// FieldsOf returns the keys of a spec struct (or a pointer to one) in
// declaration order. It panics on a malformed tag (a programming error
// caught by the package's tests).
func FieldsOf(s any) []Field {
	t := reflect.TypeOf(s)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fieldsMu.Lock()
	defer fieldsMu.Unlock()
	if f, ok := fieldsCache[t]; ok {
		return f
	}
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			panic(fmt.Sprintf("toolspec: %s.%s has no json key", t.Name(), sf.Name))
		}
		f := Field{Key: name, GoName: sf.Name, Type: sf.Type, Doc: sf.Tag.Get("doc"), Default: sf.Tag.Get("default"),
			Required: sf.Tag.Get("required"), Ignored: sf.Tag.Get("ignored")}
		if a := sf.Tag.Get("alias"); a != "" {
			f.Aliases = strings.Split(a, ",")
		}
		if e := sf.Tag.Get("enum"); e != "" {
			f.Enum = strings.Split(e, ",")
		}
		out = append(out, f)
	}
	fieldsCache[t] = out
	return out
}

// Keys returns every key kind reads (canonical keys and aliases), sorted.
func Keys(kind string) []string {
	var out []string
	for _, f := range Fields(kind) {
		out = append(out, f.Key)
		out = append(out, f.Aliases...)
	}
	sort.Strings(out)
	return out
}

// canonical maps every spelling of a spec's keys to its field.
func canonical(fields []Field) map[string]*Field {
	m := make(map[string]*Field, len(fields)*2)
	for i := range fields {
		f := &fields[i]
		m[f.Key] = f
		for _, a := range f.Aliases {
			m[a] = f
		}
	}
	return m
}

// Canonicalize returns config with every alias of kind's keys renamed to
// its canonical key, and the problems found: an alias given together with
// its key (or with another alias of it) is an error naming both. Keys the
// kind does not read are kept as they are (Check reports them); config is
// not modified. Unknown kinds return config unchanged.
func Canonicalize(kind string, config map[string]any) (map[string]any, []Problem) {
	fields := Fields(kind)
	if fields == nil || len(config) == 0 {
		return config, nil
	}
	return canonicalize(fields, config)
}

func canonicalize(fields []Field, config map[string]any) (map[string]any, []Problem) {
	names := canonical(fields)
	out := make(map[string]any, len(config))
	from := map[string]string{}
	var probs []Problem
	for _, k := range sortedKeys(config) {
		v := config[k]
		f, ok := names[k]
		if !ok {
			out[k] = v
			continue
		}
		if prev, dup := from[f.Key]; dup {
			probs = append(probs, Problem{Key: k, Message: fmt.Sprintf("%s and %s are spellings of the same key (%s): keep one", prev, k, f.Key)})
			continue
		}
		from[f.Key] = k
		out[f.Key] = v
	}
	return out, probs
}

// Problem is one finding of Check or Decode about a key.
type Problem struct {
	// Key is the key as written (an alias stays an alias).
	Key string
	// Unknown is true when the kind does not read Key (Message is then
	// empty: the validator words it, with its nearest-spelling hint).
	Unknown bool
	// Warning is true for an accepted but ignored key.
	Warning bool
	// Message says what is wrong, as a whole sentence naming the kind
	// and the key (empty when Unknown).
	Message string
}

// Error renders the problem.
func (p Problem) Error() string {
	if p.Unknown {
		return fmt.Sprintf("key %q is not read", p.Key)
	}
	return p.Message
}

// IsTemplate reports whether v is a string holding a template (rendered at
// run time: its type and value are checked then).
func IsTemplate(v any) bool {
	s, ok := v.(string)
	return ok && (strings.Contains(s, "{{") || strings.Contains(s, "{%"))
}

// Check validates a task's configuration against kind's spec without
// rendering: unknown keys (Problem.Unknown), two spellings of one key, a
// value of the wrong type, a literal outside the key's enumeration, and
// accepted-but-ignored keys (warnings). Template strings are not
// type-checked (they are rendered at run time). Required keys are checked
// by Missing. Unknown kinds return nil.
func Check(kind string, config map[string]any) []Problem {
	s, ok := Specs()[kind]
	if !ok {
		return nil
	}
	fields := FieldsOf(s)
	names := canonical(fields)
	canon, probs := canonicalize(fields, config)
	for _, k := range sortedKeys(config) {
		if _, ok := names[k]; !ok {
			probs = append(probs, Problem{Key: k, Unknown: true})
		}
	}
	byKey := map[string]*Field{}
	for i := range fields {
		byKey[fields[i].Key] = &fields[i]
	}
	written := map[string]string{}
	for k := range config {
		if f, ok := names[k]; ok {
			written[f.Key] = k
		}
	}
	for _, key := range sortedKeys(canon) {
		f, ok := byKey[key]
		if !ok {
			continue
		}
		v := canon[key]
		as := written[key]
		if f.Ignored != "" {
			probs = append(probs, Problem{Key: as, Warning: true, Message: f.Ignored})
		}
		if v == nil || IsTemplate(v) || f.Type == optionalType {
			continue
		}
		if err := decodeValue(v, f.Type); err != nil {
			probs = append(probs, Problem{Key: as, Message: fmt.Sprintf("%s %s must be %s, got %s", kind, as, describeType(f.Type), describeValue(v))})
			continue
		}
		if len(f.Enum) > 0 {
			if s, isStr := v.(string); isStr && !oneOfFold(s, f.Enum) {
				probs = append(probs, Problem{Key: as, Message: fmt.Sprintf("%s %s %q is not available here (one of %s)", kind, as, s, strings.Join(f.Enum, ", "))})
			}
		}
	}
	return probs
}

// Missing returns, for each required group of kind's spec with no key
// given in config (under any spelling; has reports other sources, e.g. a
// task's script: block, as given), the group's canonical keys in
// declaration order (any spelling of one of them satisfies the group).
func Missing(kind string, config map[string]any, has func(key string) bool) [][]string {
	var groups []string
	alts := map[string][]string{}
	given := map[string]bool{}
	for _, f := range Fields(kind) {
		if f.Required == "" {
			continue
		}
		if _, seen := alts[f.Required]; !seen {
			groups = append(groups, f.Required)
		}
		alts[f.Required] = append(alts[f.Required], f.Key)
		for _, k := range append([]string{f.Key}, f.Aliases...) {
			if present(config[k]) || has != nil && has(k) {
				given[f.Required] = true
			}
		}
	}
	var out [][]string
	for _, g := range groups {
		if !given[g] {
			out = append(out, alts[g])
		}
	}
	return out
}

func present(v any) bool {
	if v == nil {
		return false
	}
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s) != ""
	}
	return true
}

func oneOfFold(s string, set []string) bool {
	for _, x := range set {
		if strings.EqualFold(strings.TrimSpace(s), x) {
			return true
		}
	}
	return false
}

// Decode decodes a rendered task configuration into out (a pointer to a
// kind's spec): aliases are read as their keys, numbers and booleans given
// as strings (a rendered template) are converted, and an unknown key, two
// spellings of one key or a value of the wrong type is an error naming
// the key. The tool calls it first and reads only out's fields.
func Decode(config map[string]any, out Spec) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("toolspec: Decode needs a pointer to a spec, got %T", out)
	}
	fields := FieldsOf(out)
	names := canonical(fields)
	canon, probs := canonicalize(fields, config)
	if len(probs) > 0 {
		return fmt.Errorf("%s task: %s", out.Kind(), probs[0].Message)
	}
	var unknown []string
	for k := range config {
		if _, ok := names[k]; !ok {
			if k == LoaderTimeoutKey {
				delete(canon, k)
				continue
			}
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s task: key %q is not read by kind %s (it reads: %s)", out.Kind(), unknown[0], out.Kind(), strings.Join(Keys(out.Kind()), ", "))
	}
	byKey := map[string]*Field{}
	for i := range fields {
		byKey[fields[i].Key] = &fields[i]
	}
	elem := rv.Elem()
	for _, key := range sortedKeys(canon) {
		f := byKey[key]
		v := canon[key]
		if f.Type == optionalType {
			elem.FieldByName(f.GoName).Set(reflect.ValueOf(Optional{Set: true, Value: v}))
			continue
		}
		if v == nil {
			continue
		}
		dst := elem.FieldByName(f.GoName)
		if err := decodeInto(v, dst.Addr().Interface()); err != nil {
			return fmt.Errorf("%s task: %s must be %s, got %s", out.Kind(), key, describeType(f.Type), describeValue(v))
		}
	}
	return nil
}

// Optional is a value whose presence matters even when it is null (a
// secrets task's default: null is a default): Set reports the key was
// given. Decode fills it; it marshals as its Value.
type Optional struct {
	// Set is true when the key was given (even as null).
	Set bool
	// Value is the value given.
	Value any
}

// MarshalJSON writes the value (null when not set).
func (o Optional) MarshalJSON() ([]byte, error) { return json.Marshal(o.Value) }

var optionalType = reflect.TypeOf(Optional{})

// LoaderTimeoutKey is the one key the loader may put in any task's
// configuration: a mapping `timeout:` ({connect, read, total}) is kept
// there for the kinds that read it (http); Decode drops it for a kind
// whose spec does not declare it (the task's timeout in seconds is
// tools.Request.TimeoutS).
const LoaderTimeoutKey = "timeout"

// DecodePart is Decode for a block that embeds a kind's keys among keys
// of its own (a transfer's source or target block holds a postgres
// connection besides type, table, mode...): keys out's spec does not read
// are left to the block's owner instead of being errors.
func DecodePart(block map[string]any, out Spec) error {
	names := canonical(FieldsOf(out))
	part := make(map[string]any, len(block))
	for k, v := range block {
		if _, ok := names[k]; ok {
			part[k] = v
		}
	}
	return Decode(part, out)
}

// decodeValue reports whether v decodes into a value of type t.
func decodeValue(v any, t reflect.Type) error {
	p := reflect.New(t)
	return decodeInto(v, p.Interface())
}

func decodeInto(v any, ptr any) error {
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           ptr,
		WeaklyTypedInput: true,
		TagName:          "json",
		DecodeHook:       strictWeak,
	})
	if err != nil {
		return err
	}
	return d.Decode(v)
}

// strictWeak narrows mapstructure's weak typing: a mapping or a list never
// becomes a string or a number, and a string becomes a bool or a number
// only when it parses (mapstructure's own rule) — it only stops the
// "empty list becomes zero value" and "map becomes string" conversions.
func strictWeak(from, to reflect.Type, data any) (any, error) {
	switch to.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		switch from.Kind() {
		case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
			return nil, fmt.Errorf("a %s is not a %s", from.Kind(), to.Kind())
		}
	}
	return data, nil
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return "a value"
}

func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", v)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
