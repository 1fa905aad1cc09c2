package launch

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/wire"
)

// MaxFiles bounds the files sent with a playbook (Params.Files).
const MaxFiles = 64

// ErrFiles is wrapped by CheckFiles' errors (InvalidArgument).
var ErrFiles = errs.Sentinel(errs.InvalidArgument, "invalid playbook files")

// Digest is the lower-case hex sha256 of content (store.ExecutionFile;
// wire.Digest, which the CLI calls).
func Digest(content string) string { return wire.Digest(content) }

// CheckFiles validates the files sent with an inline playbook (README
// "Running any playbook": scripts beside the playbook): at most MaxFiles;
// each named by a script path the playbook reads as written
// (dsl.Playbook.ScriptFiles: nothing else travels), UTF-8 text, with the
// sha256 it claims. The size of the whole is the execution document's
// budget, checked by the caller with the source. Errors wrap ErrFiles and
// name the path, never the content.
func CheckFiles(pb *dsl.Playbook, files map[string]store.ExecutionFile) error {
	if len(files) == 0 {
		return nil
	}
	if len(files) > MaxFiles {
		return fmt.Errorf("%w: %d files, at most %d", ErrFiles, len(files), MaxFiles)
	}
	wanted := map[string]bool{}
	for _, p := range pb.ScriptFiles() {
		wanted[p] = true
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	var problems []string
	for _, p := range names {
		f := files[p]
		switch {
		case !wanted[p]:
			problems = append(problems, fmt.Sprintf("%q is not a script file the playbook reads", clip(p)))
		case !utf8.ValidString(f.Content):
			problems = append(problems, fmt.Sprintf("%q is not UTF-8 text", p))
		case !strings.EqualFold(f.SHA256, Digest(f.Content)):
			problems = append(problems, fmt.Sprintf("%q does not match its sha256", p))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrFiles, strings.Join(problems, "; "))
	}
	return nil
}

// FilesBytes is the size of files' contents and paths.
func FilesBytes(files map[string]store.ExecutionFile) int {
	n := 0
	for p, f := range files {
		n += len(p) + len(f.Content) + len(f.SHA256)
	}
	return n
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
