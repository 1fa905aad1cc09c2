package stack

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Filter is a parsed Pub/Sub subscription filter. The Pub/Sub emulator
// accepts a subscription's filter but does not apply it, so the bridge
// does, as GCP does for a push subscription (messages that do not match are
// acknowledged without delivery). The supported grammar is Pub/Sub's
// attribute filter language:
//
//	expr    := term { ("AND" | "OR") term }   (AND binds tighter than OR)
//	term    := ["NOT" | "-"] atom
//	atom    := "(" expr ")"
//	         | "attributes:" NAME                          (has attribute)
//	         | "attributes." NAME ("=" | "!=") STRING
//	         | "hasPrefix(attributes." NAME "," STRING ")"
//
// An empty filter matches every message.
type Filter struct {
	src  string
	root node
}

type node interface {
	eval(attrs map[string]string) bool
}

type (
	andNode struct{ l, r node }
	orNode  struct{ l, r node }
	notNode struct{ n node }
	hasNode struct{ key string }
	eqNode  struct {
		key, val string
		neg      bool
	}
	prefixNode struct{ key, prefix string }
)

func (n andNode) eval(a map[string]string) bool { return n.l.eval(a) && n.r.eval(a) }
func (n orNode) eval(a map[string]string) bool  { return n.l.eval(a) || n.r.eval(a) }
func (n notNode) eval(a map[string]string) bool { return !n.n.eval(a) }
func (n hasNode) eval(a map[string]string) bool {
	_, ok := a[n.key]
	return ok
}
func (n eqNode) eval(a map[string]string) bool {
	v, ok := a[n.key]
	if n.neg {
		return !ok || v != n.val
	}
	return ok && v == n.val
}
func (n prefixNode) eval(a map[string]string) bool {
	v, ok := a[n.key]
	return ok && strings.HasPrefix(v, n.prefix)
}

// ParseFilter parses a subscription filter; the error names the offset of
// the problem.
func ParseFilter(src string) (*Filter, error) {
	f := &Filter{src: src}
	if strings.TrimSpace(src) == "" {
		return f, nil
	}
	p := &filterParser{s: src}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("filter %q: unexpected %q at offset %d", src, p.s[p.i:], p.i)
	}
	f.root = n
	return f, nil
}

// Match reports whether a message with attrs passes the filter.
func (f *Filter) Match(attrs map[string]string) bool {
	if f == nil || f.root == nil {
		return true
	}
	return f.root.eval(attrs)
}

// String returns the filter's source.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.src
}

type filterParser struct {
	s string
	i int
}

func (p *filterParser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *filterParser) errf(format string, a ...any) error {
	return fmt.Errorf("filter %q at offset %d: %s", p.s, p.i, fmt.Sprintf(format, a...))
}

// keyword consumes kw when it is the next word.
func (p *filterParser) keyword(kw string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], kw) {
		end := p.i + len(kw)
		if end == len(p.s) || !isIdent(p.s[end]) {
			p.i = end
			return true
		}
	}
	return false
}

func (p *filterParser) lit(s string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], s) {
		p.i += len(s)
		return true
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func (p *filterParser) expr() (node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
	return l, nil
}

func (p *filterParser) and() (node, error) {
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.term()
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
	return l, nil
}

func (p *filterParser) term() (node, error) {
	if p.keyword("NOT") || p.lit("-") {
		n, err := p.atom()
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	}
	return p.atom()
}

func (p *filterParser) name() (string, error) {
	start := p.i
	for p.i < len(p.s) && isIdent(p.s[p.i]) && p.s[p.i] != '.' {
		p.i++
	}
	if p.i == start {
		return "", p.errf("attribute name expected")
	}
	return p.s[start:p.i], nil
}

func (p *filterParser) str() (string, error) {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", p.errf("string expected")
	}
	j := p.i + 1
	for j < len(p.s) && p.s[j] != '"' {
		if p.s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p.s) {
		return "", p.errf("unterminated string")
	}
	v, err := strconv.Unquote(p.s[p.i : j+1])
	if err != nil {
		return "", p.errf("bad string: %v", err)
	}
	p.i = j + 1
	return v, nil
}

func (p *filterParser) atom() (node, error) {
	switch {
	case p.lit("("):
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.lit(")") {
			return nil, p.errf("')' expected")
		}
		return n, nil
	case p.lit("hasPrefix("):
		if !p.lit("attributes.") {
			return nil, p.errf("attributes.NAME expected")
		}
		k, err := p.name()
		if err != nil {
			return nil, err
		}
		if !p.lit(",") {
			return nil, p.errf("',' expected")
		}
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		if !p.lit(")") {
			return nil, p.errf("')' expected")
		}
		return prefixNode{k, v}, nil
	case p.lit("attributes:"):
		k, err := p.name()
		if err != nil {
			return nil, err
		}
		return hasNode{k}, nil
	case p.lit("attributes."):
		k, err := p.name()
		if err != nil {
			return nil, err
		}
		neg := false
		switch {
		case p.lit("!="):
			neg = true
		case p.lit("="):
		default:
			return nil, p.errf("'=' or '!=' expected")
		}
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		return eqNode{k, v, neg}, nil
	}
	return nil, p.errf("attributes expression expected")
}
