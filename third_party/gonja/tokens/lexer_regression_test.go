package tokens_test

// Regression tests for the patches listed in PATCHES.md. They are plain Go
// tests (not Ginkgo) so they also run under `go test -run` and as fuzz
// seeds. Every lexing here goes through boundedLex, which stops reading
// tokens once more were produced than the input could ever hold, so a
// regression fails the test instead of exhausting the machine's memory.

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// boundedLex runs the channel lexer on input and collects its tokens. A
// lexer that makes progress emits at most one token per input byte plus
// the final EOF or error; more than that means it loops, and boundedLex
// reports it (the lexer goroutine is left blocked on its channel).
func boundedLex(t testing.TB, input string) []*tokens.Token {
	t.Helper()
	l := tokens.NewLexer(input, config.New())
	go l.Run()
	limit := len(l.Input) + 2
	var out []*tokens.Token
	for tok := range l.Tokens {
		out = append(out, tok)
		if len(out) > limit {
			t.Fatalf("lexer emitted more than %d tokens for a %d-byte input (endless loop); first tokens: %v", limit, len(l.Input), out[:8])
		}
		if tok.Type == tokens.Error || tok.Type == tokens.EOF {
			// Drain so the goroutine ends.
			for range l.Tokens {
			}
			break
		}
	}
	return out
}

// checkTokens asserts the invariants a progressing lexer keeps: positions
// never go back, and every non-error token's value is valid UTF-8 when
// the input is (a token never starts or ends inside a multi-byte rune).
func checkTokens(t testing.TB, input string, toks []*tokens.Token) {
	t.Helper()
	last := 0
	for _, tok := range toks {
		if tok.Type == tokens.Error {
			continue
		}
		if tok.Pos < last {
			t.Fatalf("token %v at %d starts before the previous token at %d", tok, tok.Pos, last)
		}
		last = tok.Pos
		if utf8.ValidString(input) && !utf8.ValidString(tok.Val) {
			t.Fatalf("token %v cuts a multi-byte character", tok)
		}
	}
}

func TestLexNumberMultiByteAfterDot(t *testing.T) {
	// Patch 1: `1.` followed by a multi-byte rune made scanNumber step back
	// by that rune's width; with U+FFFD before the number the lexer then
	// emitted empty Integer tokens forever (issue: 14 bytes of template
	// exhausted the process's memory).
	for _, input := range []string{
		"{{ \uFFFD1.中 }}",
		"{{ \uFFFD1.é }}",
		"{{ x1.中 }}",
		"{{ 1.中 }}",
		"{{ 1.5.中 }}",
		"{{ 1e5.中 }}",
		"{{ [1.中] }}",
		"{{ 1.\U0001F600 }}",
	} {
		t.Run(input, func(t *testing.T) {
			toks := boundedLex(t, input)
			checkTokens(t, input, toks)
		})
	}
}

func TestLexIntegerThenAttribute(t *testing.T) {
	// With the dot given back by position, `1.中` lexes as Integer "1",
	// Dot, Name "中" — the same split as `1.abc`.
	toks := boundedLex(t, "{{ 1.中 }}")
	var got []string
	for _, tok := range toks {
		if tok.Type == tokens.Whitespace {
			continue
		}
		got = append(got, tokens.Names[tok.Type]+":"+tok.Val)
	}
	want := "VariableBegin:{{ Integer:1 Dot:. Name:中 VariableEnd:}} EOF:"
	if strings.Join(got, " ") != want {
		t.Fatalf("tokens = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestLexTwoDotsMultiByte(t *testing.T) {
	// Patch 1, second site: the "two dots" look-ahead also stepped back by
	// the width of the rune after the second dot.
	toks := boundedLex(t, "{{ 1.5.中 }}")
	checkTokens(t, "{{ 1.5.中 }}", toks)
	var sawFloat bool
	for _, tok := range toks {
		if tok.Type == tokens.Float {
			sawFloat = true
			if tok.Val != "1.5" {
				t.Fatalf("float token = %q, want \"1.5\"", tok.Val)
			}
		}
	}
	if !sawFloat {
		t.Fatalf("no Float token in %v", toks)
	}
}

func TestLexUnexpectedCharacter(t *testing.T) {
	// Patch 2: characters no token starts with are an error (as in Jinja2)
	// instead of being glued into the next token.
	for _, input := range []string{"{{ \uFFFD1 }}", "{{ a ? b }}", "{{ $x }}", "{{ a; b }}", "{{ \U0001F600 }}"} {
		t.Run(input, func(t *testing.T) {
			toks := boundedLex(t, input)
			last := toks[len(toks)-1]
			if last.Type != tokens.Error || !strings.Contains(last.Val, "unexpected character") {
				t.Fatalf("last token = %v, want an 'unexpected character' error", last)
			}
		})
	}
	// A newline inside an expression is still accepted.
	toks := boundedLex(t, "{{ a\n + b }}")
	if last := toks[len(toks)-1]; last.Type != tokens.EOF {
		t.Fatalf("multi-line expression: last token = %v, want EOF", last)
	}
}

// FuzzLex checks that the lexer terminates on any input and keeps its
// position invariants. Seeds: the reproducers above.
func FuzzLex(f *testing.F) {
	for _, s := range []string{
		"{{ \uFFFD1.中 }}", "{{ 1.5.中 }}", "{% if a %}{{ b|c(1.2e3) }}{% endif %}",
		"{{ 'x'|center(3) }}", "{# c #}text{{ a.b[0] }}", "{{ 0x1f + 0b1 + 0o7 }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		toks := boundedLex(t, input)
		checkTokens(t, input, toks)
	})
}
