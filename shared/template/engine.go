package template

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// Limits bounds the work one Render call may do (DSL.md "Templates":
// templates are sandboxed). gonja has no context or cancellation, so the
// package checks the budget cooperatively: the clock at the top of every
// {% for %} iteration (a check the rewriter inserts into every loop body)
// and on every output write (so a render stops at most one loop-item
// materialisation — up to MaxRange items or the data's own length — after
// its deadline); sizes in range(), in the results of + ~ * and str % args,
// and on output. Without loops a template's work is linear in
// its size and in the data it touches (macros and recursion are not
// available), so these checks bound every render. A render over budget
// fails with an error wrapping ErrLimit.
type Limits struct {
	// Timeout is the wall-clock budget of one render; zero or negative
	// means no clock (SetLimits turns zero into the default).
	Timeout time.Duration
	// MaxRange is the largest number of elements range() may produce
	// (Jinja2's sandbox uses the same 100000).
	MaxRange int
	// MaxOutputBytes caps the size, in bytes, of a text render, of a
	// {% set %}/{% filter %} block body and of any string built with
	// `+`, `~`, `*` or `%`.
	MaxOutputBytes int
	// MaxItems caps the length of a list built with `+` or `*`.
	MaxItems int
}

// DefaultLimits are the limits in force until SetLimits is called: 2s per
// render, range() of at most 100000 elements (Jinja2 SandboxedEnvironment's
// MAX_RANGE), 8 MiB of text, lists of at most 1000000 items.
var DefaultLimits = Limits{
	Timeout:        2 * time.Second,
	MaxRange:       100_000,
	MaxOutputBytes: 8 << 20,
	MaxItems:       1_000_000,
}

var currentLimits atomic.Pointer[Limits]

func init() {
	l := DefaultLimits
	currentLimits.Store(&l)
}

// SetLimits replaces the Limits used by every later Render, RenderValue and
// Truthy call (renders already running keep theirs; safe to call
// concurrently). Zero or negative fields take the DefaultLimits value,
// except Timeout where a negative value disables the clock.
func SetLimits(l Limits) {
	if l.Timeout == 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	if l.MaxRange <= 0 {
		l.MaxRange = DefaultLimits.MaxRange
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultLimits.MaxOutputBytes
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultLimits.MaxItems
	}
	currentLimits.Store(&l)
}

// CurrentLimits returns the Limits in force (DefaultLimits unless
// SetLimits changed them).
func CurrentLimits() Limits { return *currentLimits.Load() }

// ErrLimit is wrapped by the error (an *Error) of a render that ran out of
// a Limits budget — time, range size, output size, string or list size —
// as opposed to a template bug; test with errors.Is. Rule: DSL.md
// "Templates" (sandboxed).
var ErrLimit = errors.New("template limit exceeded")

// ErrSandbox is wrapped by the error of an attempt to load another
// template (include/import/extends are not statements at all; the loader
// refuses any other name). Rule: DSL.md "Templates" (no file access).
var ErrSandbox = errors.New("not allowed in the template sandbox")

// guardKey is the context name of the per-render guard. It contains a ':'
// so no template identifier can name it.
const guardKey = "noetl:guard"

// guard carries one render's budget and the last error a filter produced.
type guard struct {
	limits   Limits
	deadline time.Time
	err      error
	// evalErr is the last error a filter returned; gonja reports it only
	// as text inside its own wrapping, so it is kept to report it plainly.
	evalErr error
}

// recordingFilter wraps a filter so the errors it originates are kept in
// the render's guard (see limitOr); it also hands dict literals to
// gonja's builtin filters as maps.
func recordingFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	internal := strings.HasPrefix(name, "noetl:")
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		if !internal {
			// Dict literals evaluate to gonja's *exec.Dict, which most
			// builtin filters (dictsort, ...) do not understand.
			if d, ok := in.Interface().(*exec.Dict); ok && d != nil {
				in = exec.AsValue(dictToNative(d, 0))
			}
		}
		out := f(e, in, params)
		if out != nil && out.IsError() && !in.IsError() {
			err := valueErr(out)
			if !internal && !errors.Is(err, ErrLimit) {
				err = fmt.Errorf("filter '%s': %w", name, err)
			}
			guardOf(e.Environment.Context).evalErr = err
		}
		return out
	}
}

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

// limitWriter collects text output up to the guard's MaxOutputBytes.
type limitWriter struct {
	b strings.Builder
	g *guard
}

func (w *limitWriter) WriteString(s string) (int, error) {
	if w.b.Len()+len(s) > w.g.limits.MaxOutputBytes {
		return 0, w.g.fail(fmt.Errorf("%w: output larger than %d bytes", ErrLimit, w.g.limits.MaxOutputBytes))
	}
	if err := w.g.tick(); err != nil {
		return 0, err
	}
	return w.b.WriteString(s)
}

func (w *limitWriter) Write(p []byte) (int, error) { return w.WriteString(string(p)) }

// rootID is the identifier every template is parsed under.
const rootID = "noetl-template"

// sandboxLoader serves the template's own source and refuses everything
// else, so include/import/extends (which are also not registered) can never
// read a file.
type sandboxLoader struct{ src string }

func (l *sandboxLoader) Read(path string) (io.Reader, error) {
	if path == rootID {
		return strings.NewReader(l.src), nil
	}
	return nil, fmt.Errorf("loading template %q: %w", path, ErrSandbox)
}

func (l *sandboxLoader) Resolve(path string) (string, error) {
	if path == rootID {
		return path, nil
	}
	return "", fmt.Errorf("resolving template %q: %w", path, ErrSandbox)
}

func (l *sandboxLoader) Inherit(from string) (loaders.Loader, error) {
	return nil, fmt.Errorf("loading template %q: %w", from, ErrSandbox)
}

// gonjaConfig is the lexer/parser configuration: Jinja2 defaults, no
// autoescape, undefined values are not errors.
var gonjaConfig = config.New()

// The package's own gonja environment. It is built from copies of gonja's
// builtin sets so nothing registered here leaks into gonja's globals and
// nothing registered there by other packages changes these templates.
var (
	envFilters           *exec.FilterSet
	envTests             *exec.TestSet
	envControlStructures *exec.ControlStructureSet
	envMethods           exec.Methods
	envGlobals           map[string]any
)

// builtinFilterNames lists the gonja v2 builtin filters that are kept.
var builtinFilterNames = []string{
	"abs", "attr", "batch", "capitalize", "center", "default", "d", "dictsort",
	"e", "escape", "filesizeformat", "first", "float", "forceescape", "format",
	"groupby", "indent", "int", "join", "items", "last", "length", "count",
	"list", "lower", "map", "max", "min", "pprint", "random", "rejectattr",
	"reject", "replace", "reverse", "round", "safe", "selectattr", "select",
	"slice", "sort", "string", "striptags", "sum", "title", "trim", "truncate",
	"unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
}

var builtinTestNames = []string{
	"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==",
	"escaped", "even", "false", "filter", "float", "ge", ">=", "gt",
	"greaterthan", ">", "in", "integer", "iterable", "le", "<=", "lower", "lt",
	"lessthan", "<", "mapping", "ne", "!=", "none", "number", "odd", "sameas",
	"sequence", "string", "test", "true", "undefined", "upper",
}

func init() {
	filters := map[string]exec.FilterFunction{}
	for _, name := range builtinFilterNames {
		if f, ok := builtins.Filters.Get(name); ok {
			filters[name] = f
		}
	}
	for name, f := range extraFilters() {
		filters[name] = f
	}
	for name, f := range filters {
		filters[name] = recordingFilter(name, f)
	}
	envFilters = exec.NewFilterSet(filters)

	tests := map[string]exec.TestFunction{}
	for _, name := range builtinTestNames {
		if t, ok := builtins.Tests.Get(name); ok {
			tests[name] = t
		}
	}
	envTests = exec.NewTestSet(tests)

	// Statements: no include/import/from/extends/block (no loading), no
	// macro/call (unbounded recursion), no trans. set, with and filter are
	// the package's own so their expressions are rewritten like the rest.
	cs := map[string]parser.ControlStructureParser{
		"set":    setParser,
		"with":   withParser,
		"filter": filterBlockParser,
	}
	for _, name := range []string{"if", "for", "raw", "autoescape", "do", "break", "continue"} {
		if p, ok := controlStructures.All.Get(name); ok {
			cs[name] = p
		}
	}
	envControlStructures = exec.NewControlStructureSet(cs)

	envMethods = exec.Methods{
		Bool:  builtins.Methods.Bool,
		Int:   builtins.Methods.Int,
		Float: builtins.Methods.Float,
		Str:   builtins.Methods.Str,
		Dict:  copyMethods(builtins.Methods.Dict, "keys", "values", "items", "get", "copy"),
		// list.reverse() reverses the Scope's own slice in place: left out.
		List: copyMethods(builtins.Methods.List, "append", "copy"),
	}

	envGlobals = map[string]any{
		"range":     rangeFunction,
		"namespace": namespaceFunction,
	}
	for _, name := range []string{"dict", "cycler", "joiner"} {
		if f, ok := builtins.GlobalFunctions.Get(name); ok {
			envGlobals[name] = f
		}
	}
}

func copyMethods[I any](from *exec.MethodSet[I], names ...string) *exec.MethodSet[I] {
	m := map[string]exec.Method[I]{}
	for _, n := range names {
		if f, ok := from.Get(n); ok {
			m[n] = f
		}
	}
	return exec.NewMethodSet(m)
}

// compiled is a parsed and rewritten template, shared by every render of
// the same text.
type compiled struct {
	tpl    *exec.Template
	loader loaders.Loader
	// native is the single {{ expression }} when the template is exactly
	// one (surrounding whitespace allowed); nil for text templates.
	native *nodes.Output
	err    error
}

// cacheLimit bounds the parse cache; when it is reached the cache starts
// over (templates come from playbooks, so this only trips on abuse).
const cacheLimit = 4096

type templateCache struct {
	m sync.Map // string -> *compiled
	n atomic.Int64
}

var cache atomic.Pointer[templateCache]

func init() { cache.Store(&templateCache{}) }

// compile returns the cached compilation of src, parsing it on first use.
func compile(src string) *compiled {
	c := cache.Load()
	if v, ok := c.m.Load(src); ok {
		return v.(*compiled)
	}
	cp := parse(src)
	if v, loaded := c.m.LoadOrStore(src, cp); loaded {
		return v.(*compiled)
	}
	if c.n.Add(1) > cacheLimit {
		cache.CompareAndSwap(c, &templateCache{})
	}
	return cp
}

func parse(src string) (cp *compiled) {
	cp = &compiled{loader: &sandboxLoader{src: src}}
	defer func() {
		if r := recover(); r != nil {
			cp.err = fmt.Errorf("template parser failed: %v", r)
		}
	}()
	env := &exec.Environment{
		Filters:           envFilters,
		Tests:             envTests,
		ControlStructures: envControlStructures,
		Methods:           envMethods,
		Context:           exec.EmptyContext(),
	}
	tpl, err := exec.NewTemplate(rootID, gonjaConfig, cp.loader, env)
	if err != nil {
		cp.err = cleanParseError(err, src)
		return cp
	}
	root := tpl.Root()
	rw := newRewriter()
	rw.template(root)
	if rw.err != nil {
		cp.err = rw.err
		return cp
	}
	cp.tpl = tpl
	cp.native = singleOutput(root)
	return cp
}

// cleanParseError drops gonja's "failed to parse template '<source>'"
// prefix (the caller's *Error already carries the source).
func cleanParseError(err error, src string) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	msg := strings.Replace(err.Error(), "failed to parse template '"+src+"': ", "", 1)
	return errors.New(msg)
}

// singleOutput returns the template's only {{ }} node when the template is
// that node plus whitespace and comments.
func singleOutput(root *nodes.Template) *nodes.Output {
	var out *nodes.Output
	for _, n := range root.Nodes {
		switch t := n.(type) {
		case *nodes.Output:
			if out != nil {
				return nil
			}
			out = t
		case *nodes.Data:
			if strings.TrimSpace(t.Data.Val) != "" {
				return nil
			}
		case *nodes.Comment:
		default:
			return nil
		}
	}
	return out
}

// newContext layers a fresh, writable context over the Scope: templates
// (set, for, method write-backs) write into the top layer only, never into
// the Scope map.
func newContext(s Scope, g *guard) *exec.Context {
	ctx := exec.NewContext(s).Inherit()
	ctx.Set(guardKey, g)
	return ctx
}

func environment(ctx *exec.Context) *exec.Environment {
	return &exec.Environment{
		Filters:           envFilters,
		Tests:             envTests,
		ControlStructures: envControlStructures,
		Methods:           envMethods,
		Context:           ctx,
	}
}

// evalNative evaluates a single-expression template to a native value.
func (cp *compiled) evalNative(s Scope) (result any, err error) {
	g := newGuard()
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("template evaluation failed: %v", r)
		}
	}()
	e := &exec.Evaluator{
		Config:      gonjaConfig,
		Environment: environment(newContext(s, g)),
		Loader:      cp.loader,
	}
	out := cp.native
	var v *exec.Value
	if out.Condition != nil {
		c := e.Eval(out.Condition)
		if c.IsError() {
			return nil, limitOr(g, valueErr(c))
		}
		switch {
		case c.IsTrue():
			v = e.Eval(out.Expression)
		case out.Alternative != nil:
			v = e.Eval(out.Alternative)
		default:
			return nil, nil
		}
	} else {
		v = e.Eval(out.Expression)
	}
	if v.IsError() {
		return nil, limitOr(g, valueErr(v))
	}
	if g.err != nil {
		// A limit is hard even when default() swallowed the error.
		return nil, g.err
	}
	return toNative(v, 0), nil
}

// renderText renders a template to a string.
func (cp *compiled) renderText(s Scope) (result string, err error) {
	g := newGuard()
	defer func() {
		if r := recover(); r != nil {
			result, err = "", fmt.Errorf("template rendering failed: %v", r)
		}
	}()
	w := &limitWriter{g: g}
	r := exec.NewRenderer(environment(newContext(s, g)), w, gonjaConfig, cp.loader, cp.tpl)
	if err := r.Execute(); err != nil {
		return "", limitOr(g, err)
	}
	if g.err != nil {
		return "", g.err
	}
	return w.b.String(), nil
}

// limitOr turns the error gonja reports into the one to show: the guard's
// limit error (which wraps ErrLimit) first, then the filter error gonja's
// message is about, else gonja's message without its generic prefix.
func limitOr(g *guard, err error) error {
	if g.err != nil {
		return g.err
	}
	msg := err.Error()
	if g.evalErr != nil {
		raw := g.evalErr
		if u := errors.Unwrap(raw); u != nil && strings.HasPrefix(raw.Error(), "filter '") {
			raw = u
		}
		if strings.Contains(msg, raw.Error()) {
			return g.evalErr
		}
	}
	if v, ok := err.(*exec.Value); ok {
		return valueErr(v)
	}
	if strings.HasPrefix(msg, "unable to execute template: ") {
		return errors.New(strings.TrimPrefix(msg, "unable to execute template: "))
	}
	return err
}
