package template

import (
	"fmt"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/noetl/gcpengine/shared/suggest"
)

// The rewriter adapts gonja's parse tree, once per template, to the rules
// of the NoETL DSL spec "Templates" that gonja's evaluator does not follow:
//
//   - `a.b`, `a['b']`, `a[0]` chains become one call of the internal get
//     filter: an attribute of None/undefined is undefined, not an error,
//     and no Go method or struct field is ever looked up;
//   - method calls `x.m(...)` resolve only gonja's Python-style methods and
//     the callables of gonja's helper objects (loop.cycle), never Go
//     methods;
//   - + - * / // % ** ~ and `in` go through the internal op filter (Python
//     semantics, size limits);
//   - the global functions (range, dict, namespace, cycler, joiner) are
//     resolved by name without copying them into every render's context;
//   - every {% for %} body starts with a budget check;
//   - printed values, compared operands, call arguments and call results
//     and list/tuple/dict literals go through the internal check/new
//     filters, which measure them
//     against Limits before gonja expands them (its string form, deep
//     equality and method calls walk a value whole).
type rewriter struct {
	memo map[nodes.Node]nodes.Node
	// err is the first unknown filter or test: reported at parse time, as
	// Jinja2 does.
	err error
}

func newRewriter() *rewriter { return &rewriter{memo: map[nodes.Node]nodes.Node{}} }

var opNames = map[tokens.Type]string{
	tokens.Addition:      "+",
	tokens.Subtraction:   "-",
	tokens.Multiply:      "*",
	tokens.Division:      "/",
	tokens.FloorDivision: "//",
	tokens.Modulo:        "%",
	tokens.Power:         "**",
	tokens.Tilde:         "~",
}

// comparisons are the operators gonja evaluates itself after the rewrite
// by walking both operands (deep equality, string forms).
var comparisons = map[tokens.Type]bool{
	tokens.Equals: true, tokens.Ne: true, tokens.LowerThan: true,
	tokens.LowerThanOrEqual: true, tokens.GreaterThan: true,
	tokens.GreaterThanOrEqual: true, tokens.In: true,
}

// checked wraps an expression in one of the internal budget filters
// (filterCheckName or filterNewName); nil stays nil.
func checked(n nodes.Node, filter string) nodes.Expression {
	if n == nil {
		return nil
	}
	return filtered(n.(nodes.Expression), n.Position(), filter)
}

// filtered builds `base | <name>(args...)` as a parse-tree node.
func filtered(base nodes.Expression, loc *tokens.Token, name string, args ...nodes.Expression) nodes.Expression {
	if loc == nil {
		loc = &tokens.Token{}
	}
	return &nodes.FilteredExpression{
		Expression: base,
		Filters: []*nodes.FilterCall{{
			Token:  loc,
			Name:   name,
			Args:   args,
			Kwargs: map[string]nodes.Expression{},
		}},
	}
}

func stringLiteral(loc *tokens.Token, s string) nodes.Expression {
	return &nodes.String{Location: &tokens.Token{Type: tokens.String, Val: s, Line: lineOf(loc), Col: colOf(loc)}, Val: s}
}

func intLiteral(loc *tokens.Token, i int) nodes.Expression {
	return &nodes.Integer{Location: &tokens.Token{Type: tokens.Integer, Line: lineOf(loc), Col: colOf(loc)}, Val: i}
}

func lineOf(t *tokens.Token) int {
	if t == nil {
		return 0
	}
	return t.Line
}

func colOf(t *tokens.Token) int {
	if t == nil {
		return 0
	}
	return t.Col
}

// template rewrites a whole parse tree in place.
func (rw *rewriter) template(t *nodes.Template) {
	for _, n := range t.Nodes {
		rw.stmt(n)
	}
}

func (rw *rewriter) wrapper(w *nodes.Wrapper) {
	if w == nil {
		return
	}
	for _, n := range w.Nodes {
		rw.stmt(n)
	}
}

func (rw *rewriter) stmt(n nodes.Node) {
	switch t := n.(type) {
	case *nodes.Output:
		t.Expression = checked(rw.expr(t.Expression), filterCheckName)
		t.Condition = rw.expr(t.Condition)
		t.Alternative = checked(rw.expr(t.Alternative), filterCheckName)
	case *nodes.Wrapper:
		rw.wrapper(t)
	case *nodes.ControlStructureBlock:
		rw.control(t.ControlStructure)
	}
}

func (rw *rewriter) control(c nodes.ControlStructure) {
	switch t := c.(type) {
	case *controlStructures.IfControlStructure:
		for i := range t.Conditions {
			t.Conditions[i] = rw.expr(t.Conditions[i])
		}
		for _, w := range t.Wrappers {
			rw.wrapper(w)
		}
	case *controlStructures.ForControlStructure:
		t.ObjectEvaluator = rw.expr(t.ObjectEvaluator)
		t.IfCondition = rw.expr(t.IfCondition)
		rw.wrapper(t.BodyWrapper)
		rw.wrapper(t.EmptyWrapper)
		if t.BodyWrapper != nil {
			loc := t.BodyWrapper.Location
			if loc == nil {
				loc = &tokens.Token{}
			}
			tick := &nodes.ControlStructureBlock{Location: loc, Name: "tick", ControlStructure: &tickStatement{Location: loc}}
			t.BodyWrapper.Nodes = append([]nodes.Node{tick}, t.BodyWrapper.Nodes...)
		}
	case *controlStructures.DoControlStructure:
		t.Expression = rw.expr(t.Expression)
	case *controlStructures.AutoescapeControlStructure:
		rw.wrapper(t.Wrapper)
	case *setStatement:
		t.Expression = rw.expr(t.Expression)
		t.Condition = rw.expr(t.Condition)
		t.Alternative = rw.expr(t.Alternative)
		rw.wrapper(t.Body)
	case *withStatement:
		for i := range t.Values {
			t.Values[i] = rw.expr(t.Values[i])
		}
		rw.wrapper(t.Body)
	case *filterBlock:
		for _, f := range t.Filters {
			rw.filterCall(f)
		}
		rw.wrapper(t.Body)
	}
}

func (rw *rewriter) filterCall(f *nodes.FilterCall) {
	if rw.err == nil && !envFilters.Exists(f.Name) {
		hint := ""
		if best := suggest.Nearest(f.Name, filterNames); best != "" {
			hint = fmt.Sprintf("; did you mean '%s'?", best)
		}
		rw.err = fmt.Errorf("no filter named '%s' (line %d, column %d)%s", f.Name, lineOf(f.Token), colOf(f.Token), hint)
	}
	for i := range f.Args {
		f.Args[i] = rw.expr(f.Args[i])
	}
	for k, v := range f.Kwargs {
		f.Kwargs[k] = rw.expr(v)
	}
}

// expr returns the rewritten form of an expression (memoised: gonja shares
// the receiver node between a method call's Func and Parent).
func (rw *rewriter) expr(n nodes.Node) nodes.Node {
	if n == nil {
		return nil
	}
	if r, ok := rw.memo[n]; ok {
		return r
	}
	out := rw.rewrite(n)
	rw.memo[n] = out
	return out
}

func (rw *rewriter) rewrite(n nodes.Node) nodes.Node {
	switch t := n.(type) {
	case *nodes.GetAttribute, *nodes.GetItem:
		return rw.getChain(n)
	case *nodes.Name:
		if _, ok := envGlobals[t.Name.Val]; ok {
			return filtered(&nodes.None{Location: t.Name}, t.Name, filterGlobalName, stringLiteral(t.Name, t.Name.Val))
		}
		return t
	case *nodes.Call:
		if g, ok := t.Func.(*nodes.GetAttribute); ok && t.Parent != nil {
			receiver := rw.expr(g.Node)
			t.Func = &nodes.GetAttribute{
				Location:  g.Location,
				Node:      filtered(receiver, g.Location, filterCallableName),
				Attribute: g.Attribute,
				Index:     g.Index,
			}
			t.Parent = rw.expr(t.Parent)
		} else {
			t.Func = rw.expr(t.Func)
			t.Parent = rw.expr(t.Parent)
		}
		for i := range t.Args {
			t.Args[i] = checked(rw.expr(t.Args[i]), filterNewName)
		}
		for k, v := range t.Kwargs {
			t.Kwargs[k] = checked(rw.expr(v), filterNewName)
		}
		return checked(t, filterNewName)
	case *nodes.BinaryExpression:
		left, right := rw.expr(t.Left), rw.expr(t.Right)
		if op, ok := opNames[t.Operator.Token.Type]; ok {
			if _, tuple := t.Right.(*nodes.Tuple); tuple && op == "%" {
				op = "%t"
			}
			return filtered(left, t.Operator.Token, filterOpName, stringLiteral(t.Operator.Token, op), right)
		}
		if comparisons[t.Operator.Token.Type] {
			// gonja compares by deep equality or string forms.
			left, right = checked(left, filterCheckName), checked(right, filterCheckName)
		}
		t.Left, t.Right = left, right
		return t
	case *nodes.GetSlice:
		t.Node = rw.expr(t.Node)
		t.Start = rw.expr(t.Start)
		t.End = rw.expr(t.End)
		t.Step = rw.expr(t.Step)
		return t
	case *nodes.FilteredExpression:
		if moved := filtersIntoIn(t); moved != nil {
			return rw.expr(moved)
		}
		t.Expression = rw.expr(t.Expression)
		for _, f := range t.Filters {
			rw.filterCall(f)
		}
		return t
	case *nodes.TestExpression:
		if t.Test != nil && t.Test.Name == "in" && len(t.Test.Args) == 1 {
			// gonja parses `x in y` as the test "in"; route it through
			// the op filter like the other operators.
			return filtered(rw.expr(t.Expression), t.Test.Token, filterOpName, stringLiteral(t.Test.Token, "in"), rw.expr(t.Test.Args[0]))
		}
		t.Expression = rw.expr(t.Expression)
		if t.Test != nil {
			if rw.err == nil && !envTests.Exists(t.Test.Name) {
				rw.err = fmt.Errorf("no test named '%s' (line %d, column %d)", t.Test.Name, lineOf(t.Test.Token), colOf(t.Test.Token))
			}
			for i := range t.Test.Args {
				t.Test.Args[i] = rw.expr(t.Test.Args[i])
			}
			for k, v := range t.Test.Kwargs {
				t.Test.Kwargs[k] = rw.expr(v)
			}
		}
		return t
	case *nodes.Negation:
		t.Term = rw.expr(t.Term)
		return t
	case *nodes.UnaryExpression:
		t.Term = rw.expr(t.Term)
		return t
	case *nodes.List:
		for i := range t.Val {
			t.Val[i] = rw.expr(t.Val[i])
		}
		return checked(t, filterNewName)
	case *nodes.Tuple:
		for i := range t.Val {
			t.Val[i] = rw.expr(t.Val[i])
		}
		return checked(t, filterNewName)
	case *nodes.Dict:
		for _, p := range t.Pairs {
			p.Key = rw.expr(p.Key)
			p.Value = rw.expr(p.Value)
		}
		return checked(t, filterNewName)
	case *nodes.Pair:
		t.Key = rw.expr(t.Key)
		t.Value = rw.expr(t.Value)
		return t
	case *nodes.CondExpr:
		// `a if c else b` inside an expression (third_party/gonja patch 5).
		t.Expression = rw.expr(t.Expression)
		t.Condition = rw.expr(t.Condition)
		t.Alternative = rw.expr(t.Alternative)
		return t
	}
	return n
}

// getChain turns a run of attribute/item accesses into one get filter call
// on the innermost object.
func (rw *rewriter) getChain(n nodes.Node) nodes.Node {
	var keys []nodes.Expression
	var loc *tokens.Token
	cur := n
loop:
	for {
		switch t := cur.(type) {
		case *nodes.GetAttribute:
			if t.Attribute != "" {
				keys = append(keys, stringLiteral(t.Location, t.Attribute))
			} else {
				keys = append(keys, intLiteral(t.Location, t.Index))
			}
			loc = t.Location
			cur = t.Node
		case *nodes.GetItem:
			if t.Arg == nil {
				keys = append(keys, &nodes.None{Location: t.Location})
			} else {
				keys = append(keys, rw.expr(t.Arg))
			}
			loc = t.Location
			cur = t.Node
		default:
			break loop
		}
	}
	// keys were collected outermost first.
	for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
		keys[i], keys[j] = keys[j], keys[i]
	}
	return filtered(rw.expr(cur), loc, filterGetName, keys...)
}

// filtersIntoIn fixes gonja's parse of `a in b | f` (and `x and a in b | f`,
// `a not in b | f`): gonja parses the right side of `in` without filters
// and applies the filters to the whole expression, Jinja2 applies them to
// b. It returns the corrected expression, or nil when f does not follow an
// `in`. (An explicitly parenthesised `(a in b) | f` parses the same way in
// gonja and is therefore read as `a in (b | f)` too.)
func filtersIntoIn(f *nodes.FilteredExpression) nodes.Node {
	cur := f.Expression
	for {
		switch n := cur.(type) {
		case *nodes.BinaryExpression:
			if n.Operator == nil || n.Operator.Token == nil ||
				(n.Operator.Token.Type != tokens.And && n.Operator.Token.Type != tokens.Or) {
				return nil
			}
			cur = n.Right
		case *nodes.Negation:
			cur = n.Term
		case *nodes.TestExpression:
			if n.Test == nil || n.Test.Name != "in" || len(n.Test.Args) != 1 {
				return nil
			}
			n.Test.Args[0] = &nodes.FilteredExpression{Expression: n.Test.Args[0], Filters: f.Filters}
			return f.Expression
		default:
			return nil
		}
	}
}
