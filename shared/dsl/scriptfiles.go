package dsl

import (
	"sort"
	"strings"
)

// ScriptFiles lists the script files the playbook's tasks and workbook
// entries read from the file system: the literal script.uri (or path) of
// every script block of type file (or of no type, with a uri that is not
// gs:// or http(s)://), as written, sorted, without repeats. A uri that is
// a template is left out (it is known only at run time). A playbook
// submitted from a file has these files sent with it (README "Running any
// playbook": scripts beside the playbook).
func (pb *Playbook) ScriptFiles() []string {
	if pb == nil {
		return nil
	}
	seen := map[string]bool{}
	add := func(t *Task) {
		if t == nil || t.Script == nil {
			return
		}
		if p, ok := t.Script.FilePath(); ok {
			seen[p] = true
		}
	}
	for _, s := range pb.Workflow {
		for _, t := range s.Tasks {
			add(t)
		}
	}
	for _, t := range pb.Workbook {
		add(t)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// FilePath returns the uri of a file script as written, and whether the
// script is read from a file with a literal (not templated) path.
func (s *Script) FilePath() (string, bool) {
	if s == nil || s.URI == "" || strings.Contains(s.URI, "{{") || strings.Contains(s.URI, "{%") {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(s.Source)) {
	case "file":
		return s.URI, true
	case "":
		u := strings.ToLower(s.URI)
		if strings.HasPrefix(u, "gs://") || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "s3://") {
			return "", false
		}
		return s.URI, s.Code == ""
	}
	return "", false
}
