// Package sqlsplit splits SQL scripts into statements for the SQL task
// kinds (postgres, duckdb), which decide between the single-statement path
// (parameters allowed) and the script path, and (duckdb) check each
// statement before running it.
package sqlsplit

import "strings"

// Split splits a script on top-level semicolons, honouring quotes,
// dollar quoting and comments, and drops statements that are empty or only
// comments. It decides between the single-statement path (extended protocol,
// params allowed) and the script path; the server parses the script itself.
func Split(s string) []string {
	var out []string
	start, content := 0, false
	flush := func(end int) {
		if content {
			out = append(out, strings.TrimSpace(s[start:end]))
		}
		start, content = end+1, false
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			depth := 0
			for i < len(s) {
				if s[i] == '/' && i+1 < len(s) && s[i+1] == '*' {
					depth++
					i += 2
					continue
				}
				if s[i] == '*' && i+1 < len(s) && s[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
					continue
				}
				i++
			}
			continue
		case c == '\'':
			backslash := i > 0 && (s[i-1] == 'E' || s[i-1] == 'e') && (i < 2 || !identByte(s[i-2]))
			content = true
			i++
			for i < len(s) {
				if backslash && s[i] == '\\' {
					i += 2
					continue
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			continue
		case c == '"':
			content = true
			i++
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			continue
		case c == '$' && (i == 0 || !identByte(s[i-1])):
			if tag, ok := dollarTag(s[i:]); ok {
				content = true
				end := strings.Index(s[i+len(tag):], tag)
				if end < 0 {
					i = len(s)
				} else {
					i += len(tag) + end + len(tag)
				}
				continue
			}
			content = true
		case c == ';':
			flush(i)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			content = true
		}
		i++
	}
	flush(len(s))
	return out
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// dollarTag returns the opening tag ($$ or $name$) at the start of s.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return s[:j+1], true
		}
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || (j > 1 && c >= '0' && c <= '9')) {
			return "", false
		}
	}
	return "", false
}
