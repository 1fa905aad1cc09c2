package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/wire"
)

// maxScriptFile bounds one script file sent with a playbook (the tools'
// own cap on a loaded script, 4 MiB); the api bounds the whole by the
// execution document's budget.
const maxScriptFile = 4 << 20

// playbookFiles reads the script files a playbook submitted from file
// reads (dsl.Playbook.ScriptFiles: script blocks of type file with a
// literal path), each resolved against the playbook file's own directory
// — its playbook root, whatever the working directory — and confined to
// it: an absolute path outside the directory, a `..` that leaves it and a
// symbolic link out of it are refused without a byte of the file read
// (os.Root), as is anything but a regular UTF-8 file of at most 4 MiB.
// The result maps each path as the playbook writes it to the file's text
// and sha256 (wire.ExecutionFile), for POST /executions (README "Running
// any playbook": scripts beside the playbook).
func playbookFiles(file string, pb *dsl.Playbook) (map[string]wire.ExecutionFile, error) {
	paths := pb.ScriptFiles()
	if len(paths) == 0 {
		return nil, nil
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("playbook directory %s: %v", dir, err)
	}
	defer root.Close()
	out := map[string]wire.ExecutionFile{}
	for _, written := range paths {
		p := strings.TrimPrefix(written, "file://")
		outside := fmt.Errorf("script file %q is outside the playbook's directory %s (the files a playbook reads travel with it only from under its own directory)", written, dir)
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(dir, p)
			if err != nil || !filepath.IsLocal(rel) {
				return nil, outside
			}
			p = rel
		}
		if !filepath.IsLocal(p) || strings.ContainsRune(p, 0) {
			return nil, outside
		}
		content, err := readScript(root, p)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent") {
				return nil, outside
			}
			return nil, fmt.Errorf("script file %q (in %s): %v", written, dir, err)
		}
		out[written] = wire.ExecutionFile{SHA256: wire.Digest(content), Content: content}
	}
	return out, nil
}

// readScript reads the regular UTF-8 file p of root, at most maxScriptFile
// bytes.
func readScript(root *os.Root, p string) (string, error) {
	// O_NONBLOCK: opening a FIFO would wait for a writer.
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxScriptFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxScriptFile {
		return "", fmt.Errorf("larger than %d bytes", maxScriptFile)
	}
	if !utf8.Valid(b) {
		return "", errors.New("not UTF-8 text")
	}
	return string(b), nil
}
