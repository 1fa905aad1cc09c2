package template

import (
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/tokens"
)

// blockOpeners are the statements that take an end tag; set opens a block
// only in its `{% set x %}...{% endset %}` form (no '=').
var blockOpeners = map[string]bool{
	"if": true, "for": true, "with": true, "filter": true, "autoescape": true,
	"macro": true, "call": true, "block": true, "trans": true,
}

// checkTemplateText refuses, before gonja parses it, a template longer than
// MaxTemplateBytes or nested deeper than MaxNesting (README "Security":
// bounded lexer input; gonja's parser recurses once per nesting level, and
// a deep enough template overflows the goroutine stack, which no recover
// catches). The errors wrap ErrLimit.
func checkTemplateText(src string, l Limits) error {
	if len(src) > l.MaxTemplateBytes {
		return fmt.Errorf("%w: template longer than %d bytes", ErrLimit, l.MaxTemplateBytes)
	}
	if d := nesting(src, l.MaxNesting); d > l.MaxNesting {
		return fmt.Errorf("%w: template nested deeper than %d levels (brackets, parentheses and block statements)", ErrLimit, l.MaxNesting)
	}
	return nil
}

// nesting returns how deeply brackets, parentheses, braces and block
// statements nest in src, counted on gonja's own tokens; it stops once the
// depth passes limit, and at the first lexer error (which the parser then
// reports).
func nesting(src string, limit int) int {
	depth, deepest := 0, 0
	s := tokens.LexAll(src, gonjaConfig)
	for ; !s.End(); s.Next() {
		tok := s.Current()
		switch tok.Type {
		case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
			depth++
		case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			depth--
		case tokens.BlockBegin:
			name := s.Peek()
			if name == nil || name.Type != tokens.Name {
				continue
			}
			switch {
			case blockOpeners[name.Val]:
				depth++
			case name.Val == "set":
				if !setHasAssign(s) {
					depth++
				}
			case strings.HasPrefix(name.Val, "end"):
				depth--
			}
		}
		deepest = max(deepest, depth)
		if deepest > limit {
			return deepest
		}
	}
	return deepest
}

// setHasAssign reports whether the {% set %} tag at the stream's position
// assigns (`=` before the tag's end); it advances the stream to the end of
// the tag's name.
func setHasAssign(s *tokens.Stream) bool {
	s.Next() // the "set" name
	for ; !s.End(); s.Next() {
		next := s.Peek()
		if next == nil {
			return false
		}
		switch next.Type {
		case tokens.Assign:
			return true
		case tokens.BlockEnd, tokens.EOF, tokens.Error:
			return false
		}
	}
	return false
}
