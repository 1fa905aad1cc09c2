package template

import (
	"fmt"
	"io"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The statements below replace gonja's set, with and filter: same syntax
// and behaviour, but with exported fields so the rewriter reaches their
// expressions, and with attribute assignment restricted to namespace()
// objects (Jinja2 semantics; gonja would write into any map, including the
// Scope's).

// setStatement is {% set name = expr [if c else a] %}, {% set ns.attr = ... %}
// and the block form {% set name %}...{% endset %}.
type setStatement struct {
	Location    *tokens.Token
	Name        string
	Attr        string
	Expression  nodes.Expression
	Condition   nodes.Expression
	Alternative nodes.Expression
	Body        *nodes.Wrapper
}

func (s *setStatement) Position() *tokens.Token { return s.Location }
func (s *setStatement) String() string {
	return fmt.Sprintf("SetStatement(Line=%d Col=%d)", s.Location.Line, s.Location.Col)
}

func setParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	name := args.Match(tokens.Name)
	if name == nil {
		return nil, args.Error("expected a variable name after 'set'", args.Current())
	}
	s := &setStatement{Location: name, Name: name.Val}
	if args.Match(tokens.Dot) != nil {
		attr := args.Match(tokens.Name)
		if attr == nil {
			return nil, args.Error("expected an attribute name after '.'", args.Current())
		}
		s.Attr = attr.Val
	}
	if args.Match(tokens.Assign) == nil {
		if !args.End() {
			return nil, args.Error("expected '=' or the end of the 'set' tag", args.Current())
		}
		wrapper, endargs, err := p.WrapUntil("endset")
		if err != nil {
			return nil, err
		}
		if !endargs.End() {
			return nil, endargs.Error("'endset' takes no arguments", nil)
		}
		s.Body = wrapper
		return s, nil
	}
	expr, err := args.ParseExpression()
	if err != nil {
		return nil, err
	}
	s.Expression = expr
	cond, alt, err := args.ParseCondition()
	if err != nil {
		return nil, err
	}
	if cond != nil {
		if alt == nil {
			return nil, args.Error("malformed 'set' if/else", args.Current())
		}
		s.Condition, s.Alternative = cond, alt
	}
	if !args.End() {
		return nil, args.Error("malformed 'set' tag", args.Current())
	}
	return s, nil
}

func (s *setStatement) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	var value *exec.Value
	switch {
	case s.Body != nil:
		text, err := renderBody(r, s.Body)
		if err != nil {
			return err
		}
		value = exec.AsSafeValue(text)
	case s.Condition != nil:
		c := r.Eval(s.Condition)
		if c.IsError() {
			return valueErr(c)
		}
		if c.IsTrue() {
			value = r.Eval(s.Expression)
		} else {
			value = r.Eval(s.Alternative)
		}
	default:
		value = r.Eval(s.Expression)
	}
	if value.IsError() {
		return valueErr(value)
	}
	// The value lives on in the context (or a namespace, across loop
	// iterations): size-check it and charge it.
	g := guardOf(r.Environment.Context)
	g.check(value)
	g.charge(shallowSize(value.Interface()))
	if s.Attr == "" {
		r.Environment.Context.Set(s.Name, value.Interface())
		return nil
	}
	target, _ := r.Environment.Context.Get(s.Name)
	if v, ok := target.(*exec.Value); ok {
		target = v.Interface()
	}
	ns, ok := target.(namespace)
	if !ok {
		return fmt.Errorf("cannot assign attribute %q on %q: only namespace() objects accept attribute assignment", s.Attr, s.Name)
	}
	ns[s.Attr] = value.Interface()
	return nil
}

// withStatement is {% with a = x, b = y %}...{% endwith %}.
type withStatement struct {
	Location *tokens.Token
	Names    []string
	Values   []nodes.Expression
	Body     *nodes.Wrapper
}

func (w *withStatement) Position() *tokens.Token { return w.Location }
func (w *withStatement) String() string {
	return fmt.Sprintf("WithStatement(Line=%d Col=%d)", w.Location.Line, w.Location.Col)
}

func withParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	w := &withStatement{Location: p.Current()}
	for !args.End() {
		key := args.Match(tokens.Name)
		if key == nil {
			return nil, args.Error("expected an identifier", args.Current())
		}
		if args.Match(tokens.Assign) == nil {
			return nil, args.Error("expected '='", args.Current())
		}
		value, err := args.ParseExpression()
		if err != nil {
			return nil, err
		}
		w.Names = append(w.Names, key.Val)
		w.Values = append(w.Values, value)
		if args.Match(tokens.Comma) == nil {
			break
		}
	}
	if !args.End() {
		return nil, args.Error("malformed 'with' tag", args.Current())
	}
	wrapper, endargs, err := p.WrapUntil("endwith")
	if err != nil {
		return nil, err
	}
	if !endargs.End() {
		return nil, endargs.Error("'endwith' takes no arguments", nil)
	}
	w.Body = wrapper
	if w.Location == nil {
		w.Location = &tokens.Token{}
	}
	return w, nil
}

func (w *withStatement) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	sub := r.Inherit()
	for i, name := range w.Names {
		v := r.Eval(w.Values[i])
		if v.IsError() {
			return valueErr(v)
		}
		g := guardOf(r.Environment.Context)
		g.check(v)
		g.charge(shallowSize(v.Interface()))
		sub.Environment.Context.Set(name, v)
	}
	return sub.ExecuteWrapper(w.Body)
}

// filterBlock is {% filter upper | trim %}...{% endfilter %}.
type filterBlock struct {
	Location *tokens.Token
	Filters  []*nodes.FilterCall
	Body     *nodes.Wrapper
}

func (f *filterBlock) Position() *tokens.Token { return f.Location }
func (f *filterBlock) String() string {
	return fmt.Sprintf("FilterBlock(Line=%d Col=%d)", f.Location.Line, f.Location.Col)
}

func filterBlockParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	f := &filterBlock{Location: p.Current()}
	for !args.End() {
		call, err := args.ParseFilter()
		if err != nil {
			return nil, err
		}
		f.Filters = append(f.Filters, call)
		if args.Match(tokens.Pipe) == nil {
			break
		}
	}
	if !args.End() || len(f.Filters) == 0 {
		return nil, args.Error("malformed 'filter' tag", args.Current())
	}
	wrapper, endargs, err := p.WrapUntil("endfilter")
	if err != nil {
		return nil, err
	}
	if !endargs.End() {
		return nil, endargs.Error("'endfilter' takes no arguments", nil)
	}
	f.Body = wrapper
	if f.Location == nil {
		f.Location = &tokens.Token{}
	}
	return f, nil
}

func (f *filterBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	text, err := renderBody(r, f.Body)
	if err != nil {
		return err
	}
	value := exec.AsValue(text)
	for _, call := range f.Filters {
		value = r.Evaluator().ExecuteFilter(call, value)
		if value.IsError() {
			return valueErr(value)
		}
	}
	_, err = io.WriteString(r.Output, value.String())
	return err
}

// renderBody renders a wrapper into a string under the render's output
// limit.
func renderBody(r *exec.Renderer, body *nodes.Wrapper) (string, error) {
	w := &limitWriter{g: guardOf(r.Environment.Context)}
	sub := r.Inherit()
	sub.Output = w
	if err := sub.ExecuteWrapper(body); err != nil {
		return "", err
	}
	return w.b.String(), nil
}

// tickStatement is inserted by the rewriter at the top of every loop body:
// it checks the render's clock once per iteration, and the loop's nesting
// depth (`recursive` loops call themselves once per level of the data; a
// namespace that contains itself would recurse until the stack overflows).
type tickStatement struct{ Location *tokens.Token }

func (t *tickStatement) Position() *tokens.Token { return t.Location }
func (t *tickStatement) String() string          { return "loop budget check" }

func (t *tickStatement) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	g := guardOf(r.Environment.Context)
	if err := g.tick(); err != nil {
		return err
	}
	g.charge(loopIterationBytes)
	if l, ok := r.Environment.Context.Get("loop"); ok {
		if a, ok := l.(exec.AttributeGetter); ok {
			if d, ok := a.GetAttribute("depth"); ok && d.IsInteger() && d.Integer() > maxValueDepth {
				g.abortf("loops nested deeper than %d levels", maxValueDepth)
			}
		}
	}
	return nil
}

// valueErr extracts the error carried by an error *exec.Value.
func valueErr(v *exec.Value) error {
	if err, ok := v.Interface().(error); ok {
		return err
	}
	return fmt.Errorf("%s", v.Error())
}
