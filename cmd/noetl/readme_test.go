package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// shellWords splits a command line as sh does for the simple cases of the
// docs: blanks separate words, quotes group them, an unquoted # starts a
// comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote, has := false, byte(0), false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, has = c, true
		case c == '#' && !in:
			return words
		case c == ' ' || c == '\t':
			if has {
				words = append(words, cur.String())
				cur.Reset()
				has = false
			}
			in = false
			continue
		default:
			cur.WriteByte(c)
			has = true
		}
		in = true
	}
	if has {
		words = append(words, cur.String())
	}
	return words
}

// docLine is a documented command line; block says it is a line of a
// code block (a complete command, arguments included), not a mention in
// the text.
type docLine struct {
	line  string
	block bool
}

// docCommands returns the scripts/noetl command lines of the docs: the
// lines of their code blocks and their inline code that start with
// scripts/noetl (continuation lines joined).
func docCommands(t *testing.T) map[string][]docLine {
	t.Helper()
	files := []string{"../../README.md"}
	pages, _ := filepath.Glob("../../docs/*.md")
	rb, _ := filepath.Glob("../../infra/runbooks/*.md")
	files = append(append(files, pages...), rb...)
	out := map[string][]docLine{}
	inline := regexp.MustCompile("`(scripts/noetl [^`]*)`")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "\\\n", " ")
		code := false
		for _, line := range strings.Split(s, "\n") {
			trim := strings.TrimSpace(line)
			if strings.HasPrefix(trim, "```") {
				code = !code
				continue
			}
			if code {
				if strings.HasPrefix(trim, "scripts/noetl ") {
					out[f] = append(out[f], docLine{trim, true})
				}
				continue
			}
			for _, m := range inline.FindAllStringSubmatch(line, -1) {
				out[f] = append(out[f], docLine{m[1], false})
			}
		}
	}
	return out
}

// Every scripts/noetl command the README, the pages of docs/ and the
// runbooks show (the
// deployment steps among them) is a command of the CLI, with flags it
// has and arguments its command accepts.
func TestDocumentedCommandsExist(t *testing.T) {
	n := 0
	for f, lines := range docCommands(t) {
		for _, dl := range lines {
			line := dl.line
			words := shellWords(line)[1:]
			// Mentions of several commands ("dlq list/show/replay",
			// "set|list") or of the synopsis ("COMMAND") are not command
			// lines.
			if len(words) == 0 || strings.ContainsAny(words[0], "/|") || strings.Contains(line, "COMMAND") || strings.Contains(line, "...") ||
				len(words) > 1 && strings.ContainsAny(words[1], "/|") {
				continue
			}
			n++
			a, _, _ := testApp(nil)
			root := a.rootCmd()
			cmd, rest, err := root.Find(words)
			if err != nil || (cmd == root && !strings.HasPrefix(words[0], "-")) {
				t.Errorf("%s: %q is not a command of scripts/noetl (%v)", f, line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil && !errors.Is(err, pflag.ErrHelp) {
				t.Errorf("%s: %q: %v", f, line, err)
				continue
			}
			if dl.block {
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("%s: %q: %v", f, line, err)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("checked only %d documented commands", n)
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords(`scripts/noetl run x.yaml --workload '{"a": "b c"}' --timeout 30m # note`)
	want := []string{"scripts/noetl", "run", "x.yaml", "--workload", `{"a": "b c"}`, "--timeout", "30m"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}
