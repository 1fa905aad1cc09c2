package yaml_test

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Local patch (PATCHES.md): a syntax error is a *yaml.SyntaxError with the
// problem's position and its context's, and upstream's text.
func TestSyntaxErrorPositions(t *testing.T) {
	for _, c := range []struct {
		src, text, problem, context string
		line, col, cline, ccol      int
	}{
		{"workflow:\n  - step: start\n    tool:\n      kind: noop\n     bad: x\n", "yaml: line 1: did not find expected key",
			"did not find expected key", "while parsing a block mapping", 5, 6, 2, 5},
		{"a: 1\nb: [1, 2\nc: 3\n", "yaml: line 1: did not find expected ',' or ']'",
			"did not find expected ',' or ']'", "while parsing a flow sequence", 3, 2, 2, 4},
		{"key: value: other\n", "yaml: mapping values are not allowed in this context",
			"mapping values are not allowed in this context", "", 1, 11, 0, 0},
		{"a: 'unterminated\nb: 2\n", "yaml: line 3: found unexpected end of stream",
			"found unexpected end of stream", "while scanning a quoted scalar", 3, 1, 1, 4},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.src), &n)
		var se *yaml.SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: %T %v is not a *SyntaxError", c.src, err, err)
		}
		if err.Error() != c.text || se.Problem != c.problem || se.Context != c.context ||
			se.Line != c.line || se.Column != c.col || se.ContextLine != c.cline || se.ContextColumn != c.ccol {
			t.Errorf("%q: %q %+v", c.src, err.Error(), *se)
		}
		if !strings.HasPrefix(err.Error(), "yaml: ") {
			t.Errorf("%q: %q", c.src, err)
		}
	}
}
