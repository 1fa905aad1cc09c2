package template

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// This file holds the per-render budget (Limits): the guard every render
// carries, the measurement of values, and the wrappers that put every
// filter, test and method call under it (README "Security").

// guardKey is the context name of the per-render guard. It contains a ':'
// so no template identifier can name it.
const guardKey = "noetl:guard"

// maxValueDepth is how deeply nested a value a render touches may be
// (Firestore itself stops at 20 levels; gonja's String and our toNative
// recurse once per level).
const maxValueDepth = 256

// memoMinBytes is the logical size from which a container's measured size
// is remembered for the rest of the render: large Scope values are walked
// once, and values built from shared parts (`[a, a]`) are measured in time
// proportional to their physical, not their logical, size.
const memoMinBytes = 4096

// Logical size accounting (Limits.MaxValueBytes): a scalar or a container
// slot costs slotBytes, a string slotBytes plus its bytes.
const (
	slotBytes   = 16
	headerBytes = 24
)

// guard carries one render's budget and the last error a filter produced.
type guard struct {
	limits   Limits
	deadline time.Time
	err      error
	// evalErr is the last error a filter returned; gonja reports it only
	// as text inside its own wrapping, so it is kept to report it plainly.
	evalErr error
	// alloc is the number of bytes charged so far (Limits.MaxAllocBytes).
	alloc int
	// memo remembers the logical size of large, immutable containers.
	memo map[sizeKey]sizeMemo
}

// sizeKey identifies a container by its data pointer and length. The
// unsafe.Pointer keeps the container alive for the render, so its address
// cannot be reused by another value while the memo exists.
type sizeKey struct {
	p unsafe.Pointer
	n int
}

type sizeMemo struct{ size, depth int }

// abortRender is the panic value with which a failed limit check stops a
// render at once, whatever gonja would do with an error value (some
// filters swallow errors, method calls ignore a failed receiver, error
// values passed on are flattened to text). The render's recover turns it
// into the guard's first limit error (err when the guard has none: the
// method pre-checks cannot reach the guard).
type abortRender struct{ err error }

func newGuard() *guard {
	g := &guard{limits: *currentLimits.Load()}
	if g.limits.Timeout > 0 {
		g.deadline = time.Now().Add(g.limits.Timeout)
	}
	return g
}

// fail records the first limit error and returns it.
func (g *guard) fail(err error) error {
	if g.err == nil {
		g.err = err
	}
	return g.err
}

// abort records err (the first limit error wins) and stops the render.
func (g *guard) abort(err error) {
	g.fail(err)
	panic(abortRender{err: err})
}

// abortf aborts with a limit error: "<ErrLimit>: <message>".
func (g *guard) abortf(format string, args ...any) {
	g.abort(fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...))
}

// tick checks the clock.
func (g *guard) tick() error {
	if g.err != nil {
		return g.err
	}
	if !g.deadline.IsZero() && time.Now().After(g.deadline) {
		return g.fail(fmt.Errorf("%w: render took longer than %s", ErrLimit, g.limits.Timeout))
	}
	return nil
}

// loopIterationBytes is what one {% for %} iteration is charged: gonja
// materialises every iteration's item, loop variables and sub-renderer
// (measured at about 2 KiB per iteration).
const loopIterationBytes = 2048

// step checks the clock and aborts the render when the budget is spent.
func (g *guard) step() {
	if err := g.tick(); err != nil {
		panic(abortRender{err: err})
	}
}

// guardOf finds the render's guard in a gonja context; renders always set
// one, the fallback only serves evaluators built elsewhere.
func guardOf(ctx *exec.Context) *guard {
	if ctx != nil {
		if v, ok := ctx.Get(guardKey); ok {
			if g, ok := v.(*guard); ok {
				return g
			}
		}
	}
	return newGuard()
}

// check measures v and aborts the render when its logical size is over
// MaxValueBytes or it is nested deeper than maxValueDepth. It returns the
// logical size.
func (g *guard) check(v any) int {
	m := meter{g: g, limit: g.limits.MaxValueBytes}
	size, _, _ := m.walk(v, 0)
	switch {
	case m.tooDeep:
		g.abortf("value nested deeper than %d levels", maxValueDepth)
	case m.over:
		g.abortf("value larger than %d bytes", g.limits.MaxValueBytes)
	}
	return size
}

// produced checks a value a filter, method, operator or call built: its
// logical size (check), a string against MaxOutputBytes, a list against
// MaxItems, and charges its shallow size to MaxAllocBytes.
func (g *guard) produced(v any) {
	if x, ok := v.(*exec.Value); ok {
		if x == nil || x.IsError() {
			return
		}
		v = x.Interface()
	}
	g.check(v)
	switch x := v.(type) {
	case string:
		if len(x) > g.limits.MaxOutputBytes {
			g.abortf("string longer than %d bytes", g.limits.MaxOutputBytes)
		}
	default:
		if n := listLen(v); n > g.limits.MaxItems {
			g.abortf("list longer than %d items", g.limits.MaxItems)
		}
	}
	g.charge(shallowSize(v))
}

// charge adds n bytes to the render's allocation and aborts over
// MaxAllocBytes.
func (g *guard) charge(n int) {
	g.alloc = satAdd(g.alloc, n)
	if g.alloc > g.limits.MaxAllocBytes {
		g.abortf("render built more than %d bytes of values", g.limits.MaxAllocBytes)
	}
}

// listLen is the length of a list value (-1 for anything else).
func listLen(v any) int {
	switch x := v.(type) {
	case []any:
		return len(x)
	case exec.ValuesList:
		return len(x)
	case string, map[string]any, namespace, nil:
		return -1
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return rv.Len()
	}
	return -1
}

// shallowSize estimates the bytes a freshly built value itself occupies,
// not counting the values it refers to (those were charged when built).
func shallowSize(v any) int {
	switch x := v.(type) {
	case string:
		return slotBytes + len(x)
	case []any:
		return headerBytes + slotBytes*len(x)
	case exec.ValuesList:
		return headerBytes + 4*slotBytes*len(x)
	case map[string]any:
		return 3*slotBytes + 3*slotBytes*len(x)
	case namespace:
		return 3*slotBytes + 3*slotBytes*len(x)
	case *exec.Dict:
		if x == nil {
			return slotBytes
		}
		return headerBytes + 6*slotBytes*len(x.Pairs)
	case nil, bool, int, float64:
		return slotBytes
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return headerBytes + slotBytes*rv.Len()
	case reflect.Map:
		return 3*slotBytes + 3*slotBytes*rv.Len()
	case reflect.String:
		return slotBytes + rv.Len()
	}
	return slotBytes
}

func satAdd(a, b int) int {
	if s := a + b; s >= a && s >= 0 {
		return s
	}
	return math.MaxInt
}

// meter is one measurement walk. It stops as soon as the running total
// passes limit (the render is aborted anyway), so a walk costs at most
// limit/slotBytes steps whatever the value's logical size.
type meter struct {
	g       *guard
	limit   int
	total   int
	over    bool
	tooDeep bool
}

func (m *meter) add(n int) {
	m.total = satAdd(m.total, n)
	if m.total > m.limit {
		m.over = true
	}
}

// lookup returns a remembered size and adds it to the running total; depth
// is where the container sits in the walk.
func (m *meter) lookup(k sizeKey, depth int) (sizeMemo, bool) {
	if m.g.memo == nil || k.p == nil {
		return sizeMemo{}, false
	}
	s, ok := m.g.memo[k]
	if ok {
		m.add(s.size)
		if depth+s.depth > maxValueDepth {
			m.tooDeep = true
		}
	}
	return s, ok
}

// remember stores a complete, immutable measurement of a large container.
func (m *meter) remember(k sizeKey, size, depth int, volatile bool) {
	if m.over || m.tooDeep || volatile || k.p == nil || size < memoMinBytes {
		return
	}
	if m.g.memo == nil {
		m.g.memo = map[sizeKey]sizeMemo{}
	}
	m.g.memo[k] = sizeMemo{size: size, depth: depth}
}

// walk returns v's logical size and nesting depth, and whether v contains
// a mutable value (a namespace), whose size must not be remembered.
func (m *meter) walk(v any, depth int) (size, d int, volatile bool) {
	if m.over || m.tooDeep {
		return 0, 0, false
	}
	if depth > maxValueDepth {
		m.tooDeep = true
		return 0, 0, false
	}
	switch x := v.(type) {
	case nil, bool, int, float64, int64, int32, float32, uint, uint64, uint32:
		m.add(slotBytes)
		return slotBytes, 0, false
	case string:
		n := slotBytes + len(x)
		m.add(n)
		return n, 0, false
	case *exec.Value:
		if x == nil {
			m.add(slotBytes)
			return slotBytes, 0, false
		}
		return m.walk(x.Interface(), depth)
	case []any:
		return walkList(m, x, depth)
	case exec.ValuesList:
		return walkList(m, x, depth)
	case map[string]any:
		k := sizeKey{reflect.ValueOf(x).UnsafePointer(), len(x)}
		if s, ok := m.lookup(k, depth); ok {
			return s.size, s.depth, false
		}
		size, d, volatile = m.mapEntries(x, depth)
		m.remember(k, size, d, volatile)
		return size, d, volatile
	case namespace:
		// Mutable ({% set ns.x %}): measured every time, never remembered.
		size, d, _ = m.mapEntries(x, depth)
		return size, d, true
	case *exec.Dict:
		if x == nil {
			m.add(slotBytes)
			return slotBytes, 0, false
		}
		k := sizeKey{unsafe.Pointer(x), len(x.Pairs)}
		if s, ok := m.lookup(k, depth); ok {
			return s.size, s.depth, false
		}
		size = headerBytes
		m.add(headerBytes)
		for _, p := range x.Pairs {
			ks, kd, kv := m.walk(p.Key, depth+1)
			vs, vd, vv := m.walk(p.Value, depth+1)
			size, d, volatile = satAdd(size, satAdd(ks, vs)), max(d, kd+1, vd+1), volatile || kv || vv
			if m.over || m.tooDeep {
				return size, d, volatile
			}
		}
		m.remember(k, size, d, volatile)
		return size, d, volatile
	case exec.Dict:
		return m.walk(&x, depth)
	case *big.Int:
		n := slotBytes + x.BitLen()/3
		m.add(n)
		return n, 0, false
	case *callableView, error:
		m.add(slotBytes)
		return slotBytes, 0, false
	}
	return m.reflectWalk(v, depth)
}

// walkList measures a list (a []any or gonja's []*exec.Value) and its
// elements, remembered by its backing array like the other containers.
func walkList[E any](m *meter, x []E, depth int) (size, d int, volatile bool) {
	k := sizeKey{unsafe.Pointer(unsafe.SliceData(x)), len(x)}
	if s, ok := m.lookup(k, depth); ok {
		return s.size, s.depth, false
	}
	size = headerBytes
	m.add(headerBytes)
	for _, e := range x {
		es, ed, ev := m.walk(e, depth+1)
		size, d, volatile = satAdd(size, es), max(d, ed+1), volatile || ev
		if m.over || m.tooDeep {
			return size, d, volatile
		}
	}
	m.remember(k, size, d, volatile)
	return size, d, volatile
}

func (m *meter) mapEntries(x map[string]any, depth int) (size, d int, volatile bool) {
	size = 3 * slotBytes
	m.add(size)
	for key, e := range x {
		kn := slotBytes + len(key)
		m.add(kn)
		es, ed, ev := m.walk(e, depth+1)
		size, d, volatile = satAdd(size, satAdd(kn, es)), max(d, ed+1), volatile || ev
		if m.over || m.tooDeep {
			return size, d, volatile
		}
	}
	return size, d, volatile
}

// reflectWalk measures the Go values gonja's builtins produce besides the
// plain shapes ([]int from range, []string, map[string]*exec.Value, ...).
// Structs, functions and gonja's helper objects count as one slot.
func (m *meter) reflectWalk(v any, depth int) (size, d int, volatile bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		n := slotBytes + rv.Len()
		m.add(n)
		return n, 0, false
	case reflect.Slice, reflect.Array:
		var k sizeKey
		if rv.Kind() == reflect.Slice {
			k = sizeKey{rv.UnsafePointer(), rv.Len()}
			if s, ok := m.lookup(k, depth); ok {
				return s.size, s.depth, false
			}
		}
		size = headerBytes
		m.add(headerBytes)
		if ek := rv.Type().Elem().Kind(); ek != reflect.Interface && ek != reflect.Pointer &&
			ek != reflect.Slice && ek != reflect.Map && ek != reflect.String && ek != reflect.Array && ek != reflect.Struct {
			// Scalars only ([]int, []byte, ...): no need to visit them.
			n := slotBytes * rv.Len()
			m.add(n)
			return satAdd(size, n), 1, false
		}
		for i := range rv.Len() {
			es, ed, ev := m.walk(rv.Index(i).Interface(), depth+1)
			size, d, volatile = satAdd(size, es), max(d, ed+1), volatile || ev
			if m.over || m.tooDeep {
				return size, d, volatile
			}
		}
		m.remember(k, size, d, volatile)
		return size, d, volatile
	case reflect.Map:
		k := sizeKey{rv.UnsafePointer(), rv.Len()}
		if s, ok := m.lookup(k, depth); ok {
			return s.size, s.depth, false
		}
		size = 3 * slotBytes
		m.add(size)
		it := rv.MapRange()
		for it.Next() {
			ks, kd, kv := m.walk(it.Key().Interface(), depth+1)
			vs, vd, vv := m.walk(it.Value().Interface(), depth+1)
			size, d, volatile = satAdd(size, satAdd(ks, vs)), max(d, kd+1, vd+1), volatile || kv || vv
			if m.over || m.tooDeep {
				return size, d, volatile
			}
		}
		m.remember(k, size, d, volatile)
		return size, d, volatile
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			m.add(slotBytes)
			return slotBytes, 0, false
		}
		if e := rv.Elem(); e.Kind() != reflect.Struct {
			return m.walk(e.Interface(), depth+1)
		}
	}
	m.add(slotBytes)
	return slotBytes, 0, false
}

// Internal filters the rewriter inserts around expressions. Their names
// contain ':' so no template can call them.
const (
	// filterCheckName checks the logical size of its input (printed
	// values, compared operands, method receivers).
	filterCheckName = "noetl:check"
	// filterNewName checks and charges a value just built (call results
	// and arguments).
	filterNewName = "noetl:new"
)

func filterCheck(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	g := guardOf(e.Environment.Context)
	if in.IsError() {
		g.propagate(in)
		return in
	}
	g.step()
	g.check(in)
	return in
}

func filterNew(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	g := guardOf(e.Environment.Context)
	if in.IsError() {
		g.propagate(in)
		return in
	}
	g.step()
	g.produced(in)
	return in
}

// propagate aborts the render when an error value carries a limit error
// (a method's pre-check cannot reach the guard and returns one instead).
func (g *guard) propagate(v *exec.Value) {
	if err, ok := v.Interface().(error); ok && errors.Is(err, ErrLimit) {
		g.abort(err)
	}
}

// filterPolicy says how a filter is put under the budget.
type filterPolicy struct {
	// selector filters return their input, an argument or a part of one
	// (first, default, attribute access): nothing is walked or charged.
	selector bool
	// pre, when set, checks the size of what the filter would build from
	// its input and arguments before it runs.
	pre func(g *guard, in *exec.Value, p *exec.VarArgs)
}

var filterPolicies = map[string]filterPolicy{
	filterGetName:      {selector: true},
	filterGlobalName:   {selector: true},
	filterCallableName: {selector: true},
	"first":            {selector: true},
	"last":             {selector: true},
	"default":          {selector: true},
	"d":                {selector: true},
	"attr":             {selector: true},
	"random":           {selector: true},
	"safe":             {selector: true},
	"length":           {selector: true},
	"count":            {selector: true},
	"list":             {pre: preIterate},
	"map":              {pre: preIterate},
	"select":           {pre: preIterate},
	"reject":           {pre: preIterate},
	"selectattr":       {pre: preIterate},
	"rejectattr":       {pre: preIterate},
	"unique":           {pre: preIterate},
	"sort":             {pre: preIterate},
	"dictsort":         {pre: preIterate},
	"groupby":          {pre: preIterate},
	"reverse":          {pre: preIterate},
	"center":           {pre: preCenter},
	"indent":           {pre: preIndent},
	"replace":          {pre: preReplace},
	"join":             {pre: preJoin},
	"batch":            {pre: preBatchIterate},
	"slice":            {pre: preSliceIterate},
	"int":              {pre: preInt},
}

// recordingFilter wraps a filter so that it runs under the render's
// budget (clock, input and argument sizes, its own pre-check, the size
// and cost of its result) and the errors it originates are kept in the
// render's guard (see limitOr); it also hands dict literals to gonja's
// builtin filters as maps.
func recordingFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	internal := strings.HasPrefix(name, "noetl:")
	policy := filterPolicies[name]
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		g := guardOf(e.Environment.Context)
		if in.IsError() {
			g.propagate(in)
		}
		g.step()
		switch {
		case name == filterCallableName:
			// A method call's receiver: gonja copies dicts and lists
			// whole before calling the method (charged), and formats the
			// receiver into the error of an unknown method.
			size := g.check(in)
			if in.IsDict() || in.IsList() {
				g.charge(size)
			}
		case name == filterGetName:
			// Keys are compared with gonja's deep equality.
			for _, a := range params.Args {
				if !a.IsString() && !a.IsInteger() {
					g.check(a)
				}
			}
		case !policy.selector:
			g.check(in)
			for _, a := range params.Args {
				g.check(a)
			}
			for _, a := range params.KwArgs {
				g.check(a)
			}
		}
		if !internal {
			// Dict literals evaluate to gonja's *exec.Dict, which most
			// builtin filters (dictsort, ...) do not understand.
			if d, ok := in.Interface().(*exec.Dict); ok && d != nil {
				in = exec.AsValue(dictToNative(d, 0))
			}
		}
		if policy.pre != nil && !in.IsError() {
			policy.pre(g, in, params)
		}
		out := f(e, in, params)
		if out != nil && out.IsError() && !in.IsError() {
			err := valueErr(out)
			if errors.Is(err, ErrLimit) {
				g.abort(err)
			}
			if !internal {
				err = fmt.Errorf("filter '%s': %w", name, err)
			}
			g.evalErr = err
		} else if out != nil && !policy.selector && name != filterCheckName && name != filterNewName {
			g.produced(out)
		}
		return out
	}
}

// recordingTest wraps a test (`x is eq(y)`, select('eq', ...)) so that it
// runs under the render's budget: gonja compares values by walking them
// (deep equality, string forms), so input and arguments are size-checked.
func recordingTest(t exec.TestFunction) exec.TestFunction {
	fn := reflect.ValueOf(t)
	byContext := fn.Type().In(0) == reflect.TypeFor[*exec.Context]()
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) (bool, error) {
		g := guardOf(e.Environment.Context)
		g.step()
		g.check(in)
		for _, a := range params.Args {
			g.check(a)
		}
		for _, a := range params.KwArgs {
			g.check(a)
		}
		first := reflect.ValueOf(e)
		if byContext {
			first = reflect.ValueOf(e.Environment.Context)
		}
		out := fn.Call([]reflect.Value{first, reflect.ValueOf(in), reflect.ValueOf(params)})
		var err error
		if !out[1].IsNil() {
			err = out[1].Interface().(error)
		}
		return out[0].Bool(), err
	}
}

// limitedMethods wraps a gonja method set so that every method first runs
// its size pre-check (methodPre). Methods get no evaluator, so the checks
// use the Limits in force and abort the render with their error, which
// the render's recover reports.
func limitedMethods[I any](from *exec.MethodSet[I], names ...string) *exec.MethodSet[I] {
	m := map[string]exec.Method[I]{}
	for _, n := range names {
		f, ok := from.Get(n)
		if !ok {
			continue
		}
		pre := methodPre[n]
		m[n] = func(self I, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
			if pre != nil {
				if s, ok := any(self).(string); ok {
					if err := pre(s, args, CurrentLimits()); err != nil {
						panic(abortRender{err: err})
					}
				}
			}
			return f(self, selfValue, args)
		}
	}
	return exec.NewMethodSet(m)
}
