package template

import (
	"sort"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// Names returns the root names a template reads from its Scope (NoETL DSL spec
// "Templates": the validator warns about names no scope defines), sorted
// and without duplicates: "{{ ctx.page + workload.size }}" reads ctx and
// workload, "{{ users | map(attribute='id') | list }}" reads users.
//
// Not counted: names the template binds itself ({% set x = ... %} for the
// rest of the template, {% for k, v in ... %} targets and loop inside the
// loop, {% with %} names inside the block), the engine's global functions
// (range, dict, namespace, cycler, joiner), literals (true, false, none)
// and attribute or filter names. A string without "{{" or "{%" reads
// nothing. A template that does not parse returns Check's *Error.
func Names(tmpl string) ([]string, error) {
	if !hasMarkup(tmpl) {
		return nil, nil
	}
	cp := compile(tmpl)
	if cp.err != nil {
		return nil, &Error{Template: tmpl, Err: cp.err}
	}
	w := &nameWalker{found: map[string]bool{}}
	w.push()
	for _, n := range cp.tpl.Root().Nodes {
		w.stmt(n)
	}
	out := make([]string, 0, len(w.found))
	for n := range w.found {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Uses returns, for each root name a template reads (as Names), how it
// is read: the attributes (or constant string items) read directly on it
// (`{{ big._ref }}`, `{{ big['_store'] }}` give "_ref", "_store"), and
// "" when it is used in any other way (whole: printed, iterated, passed
// to a filter, indexed by a computed key). The result tier loads a stored
// result only for templates that read more of it than its reference's
// own fields (README "Architecture": fetched only when read). A template that does
// not parse returns Check's *Error.
func Uses(tmpl string) (map[string][]string, error) {
	if !hasMarkup(tmpl) {
		return nil, nil
	}
	cp := compile(tmpl)
	if cp.err != nil {
		return nil, &Error{Template: tmpl, Err: cp.err}
	}
	w := &nameWalker{found: map[string]bool{}, uses: map[string][]string{}}
	w.push()
	for _, n := range cp.tpl.Root().Nodes {
		w.stmt(n)
	}
	return w.uses, nil
}

// nameWalker collects the free names of a (rewritten) parse tree; bound is
// a stack of the names bound by enclosing for/with blocks and by set.
// uses, when not nil, also records how each name is read (Uses).
type nameWalker struct {
	found map[string]bool
	bound []map[string]bool
	uses  map[string][]string
}

// use records one read of name: attr "" is a whole use.
func (w *nameWalker) use(name, attr string) {
	if w.uses == nil || name == "" || w.isBound(name) || literalNames[name] {
		return
	}
	if _, global := envGlobals[name]; global {
		return
	}
	for _, a := range w.uses[name] {
		if a == attr {
			return
		}
	}
	w.uses[name] = append(w.uses[name], attr)
}

func (w *nameWalker) push(names ...string) {
	m := map[string]bool{}
	for _, n := range names {
		if n != "" {
			m[n] = true
		}
	}
	w.bound = append(w.bound, m)
}

func (w *nameWalker) pop() { w.bound = w.bound[:len(w.bound)-1] }

// bind binds a name in the innermost scope ({% set %}).
func (w *nameWalker) bind(name string) { w.bound[len(w.bound)-1][name] = true }

func (w *nameWalker) isBound(name string) bool {
	for i := len(w.bound) - 1; i >= 0; i-- {
		if w.bound[i][name] {
			return true
		}
	}
	return false
}

func (w *nameWalker) wrapper(wr *nodes.Wrapper) {
	if wr == nil {
		return
	}
	for _, n := range wr.Nodes {
		w.stmt(n)
	}
}

func (w *nameWalker) stmt(n nodes.Node) {
	switch t := n.(type) {
	case *nodes.Output:
		w.expr(t.Expression)
		w.expr(t.Condition)
		w.expr(t.Alternative)
	case *nodes.Wrapper:
		w.wrapper(t)
	case *nodes.ControlStructureBlock:
		w.control(t.ControlStructure)
	}
}

func (w *nameWalker) control(c nodes.ControlStructure) {
	switch t := c.(type) {
	case *controlStructures.IfControlStructure:
		for _, cond := range t.Conditions {
			w.expr(cond)
		}
		for _, wr := range t.Wrappers {
			w.wrapper(wr)
		}
	case *controlStructures.ForControlStructure:
		w.expr(t.ObjectEvaluator)
		w.push(t.Key, t.Value, "loop")
		w.expr(t.IfCondition)
		w.wrapper(t.BodyWrapper)
		w.pop()
		w.wrapper(t.EmptyWrapper)
	case *controlStructures.DoControlStructure:
		w.expr(t.Expression)
	case *controlStructures.AutoescapeControlStructure:
		w.wrapper(t.Wrapper)
	case *setStatement:
		w.expr(t.Expression)
		w.expr(t.Condition)
		w.expr(t.Alternative)
		w.wrapper(t.Body)
		if t.Attr != "" {
			w.name(t.Name)
		} else {
			w.bind(t.Name)
		}
	case *withStatement:
		for _, v := range t.Values {
			w.expr(v)
		}
		w.push(t.Names...)
		w.wrapper(t.Body)
		w.pop()
	case *filterBlock:
		for _, f := range t.Filters {
			w.filterCall(f)
		}
		w.wrapper(t.Body)
	}
}

// literalNames are Jinja2's literal spellings that gonja may parse as
// names (Jinja2 reads them as True, False and None).
var literalNames = map[string]bool{"true": true, "false": true, "none": true, "True": true, "False": true, "None": true}

func (w *nameWalker) name(n string) {
	if n == "" || w.isBound(n) || literalNames[n] {
		return
	}
	if _, global := envGlobals[n]; global {
		return
	}
	w.found[n] = true
}

func (w *nameWalker) filterCall(f *nodes.FilterCall) {
	for _, a := range f.Args {
		w.expr(a)
	}
	for _, a := range f.Kwargs {
		w.expr(a)
	}
}

func (w *nameWalker) expr(n nodes.Node) {
	switch t := n.(type) {
	case nil:
	case *nodes.Name:
		if t.Name != nil {
			w.name(t.Name.Val)
			w.use(t.Name.Val, "")
		}
	case *nodes.FilteredExpression:
		// name.attr... (rewritten as name | noetl:get("attr", ...)).
		if nm, ok := t.Expression.(*nodes.Name); ok && nm.Name != nil && len(t.Filters) > 0 && t.Filters[0].Name == filterGetName && len(t.Filters[0].Args) > 0 {
			if key, ok := t.Filters[0].Args[0].(*nodes.String); ok {
				w.name(nm.Name.Val)
				w.use(nm.Name.Val, key.Val)
				for _, f := range t.Filters {
					w.filterCall(f)
				}
				return
			}
		}
		w.expr(t.Expression)
		for _, f := range t.Filters {
			w.filterCall(f)
		}
	case *nodes.TestExpression:
		w.expr(t.Expression)
		if t.Test != nil {
			for _, a := range t.Test.Args {
				w.expr(a)
			}
			for _, a := range t.Test.Kwargs {
				w.expr(a)
			}
		}
	case *nodes.Call:
		w.expr(t.Func)
		w.expr(t.Parent)
		for _, a := range t.Args {
			w.expr(a)
		}
		for _, a := range t.Kwargs {
			w.expr(a)
		}
	case *nodes.GetAttribute:
		w.expr(t.Node)
	case *nodes.GetItem:
		w.expr(t.Node)
		w.expr(t.Arg)
	case *nodes.GetSlice:
		w.expr(t.Node)
		w.expr(t.Start)
		w.expr(t.End)
		w.expr(t.Step)
	case *nodes.BinaryExpression:
		w.expr(t.Left)
		w.expr(t.Right)
	case *nodes.Negation:
		w.expr(t.Term)
	case *nodes.UnaryExpression:
		w.expr(t.Term)
	case *nodes.List:
		for _, v := range t.Val {
			w.expr(v)
		}
	case *nodes.Tuple:
		for _, v := range t.Val {
			w.expr(v)
		}
	case *nodes.Dict:
		for _, p := range t.Pairs {
			w.expr(p.Key)
			w.expr(p.Value)
		}
	case *nodes.Pair:
		w.expr(t.Key)
		w.expr(t.Value)
	case *nodes.CondExpr:
		w.expr(t.Expression)
		w.expr(t.Condition)
		w.expr(t.Alternative)
	}
}
