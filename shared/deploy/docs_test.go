package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// anchorOf is GitHub's anchor of a Markdown heading: lower case, without
// punctuation but hyphens and underscores, blanks as hyphens.
func anchorOf(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// anchors returns the anchors of a Markdown file's headings (outside code
// blocks).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	code := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
			continue
		}
		if !code && strings.HasPrefix(line, "#") {
			out[anchorOf(strings.TrimLeft(line, "#"))] = true
		}
	}
	return out
}

// The README is a front door of at most 300 lines, and every relative link
// of the README and of docs/*.md names a file of the repository and, with
// a #fragment into a Markdown file, one of its headings.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 300 {
		t.Errorf("README.md has %d lines: the front door keeps to 300; move the rest to docs/", n)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(pages) < 10 {
		t.Fatalf("docs/ has %d pages", len(pages))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dst := f
			if file != "" {
				dst = filepath.Join(filepath.Dir(f), file)
			}
			checked++
			text, err := os.ReadFile(dst)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(dst, ".md") && !anchors(string(text))[frag] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", f, target, dst)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d links", checked)
	}
}

func TestAnchorOf(t *testing.T) {
	for h, want := range map[string]string{
		" Editor support (JSON Schema)":    "editor-support-json-schema",
		"Errors: one code, one decision":   "errors-one-code-one-decision",
		"Functions on the stack as on GCP": "functions-on-the-stack-as-on-gcp",
	} {
		if got := anchorOf(h); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", h, got, want)
		}
	}
}
