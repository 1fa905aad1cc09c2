//go:build !cgo

package duckdb

import (
	"context"

	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// Available reports whether this build has the DuckDB engine: false in a
// build without cgo.
const Available = false

// Tool is the duckdb task kind of a build without cgo: every task fails.
type Tool struct{}

// New returns the stub tool.
func New(Options) *Tool { return &Tool{} }

// Close does nothing.
func (*Tool) Close() {}

// Exec fails with kind "config": DuckDB needs a cgo build.
func (*Tool) Exec(context.Context, map[string]any, map[string]any, float64) types.Outcome {
	return conf.ConfigError("duckdb task: this engine was built without cgo (CGO_ENABLED=0), so DuckDB is not available; build with cgo and a C compiler")
}

func driverValue(any) (any, bool) { return nil, false }

var errNoCgo = &stubError{}

type stubError struct{}

func (*stubError) Error() string {
	return "DuckDB is not available: this engine was built without cgo (CGO_ENABLED=0)"
}

// QueryRows fails: DuckDB needs a cgo build.
func (*Tool) QueryRows(context.Context, string, string, any, int, func([]string, [][]any) error) error {
	return errNoCgo
}

// WriteMode is how Writer treats the table's existing rows.
type WriteMode string

// Write modes (NoETL transfer `mode`).
const (
	// ModeAppend inserts after the existing rows.
	ModeAppend WriteMode = "append"
	// ModeReplace deletes the existing rows first.
	ModeReplace WriteMode = "replace"
)

// Writer is the stub writer.
type Writer struct{}

// OpenWriter fails: DuckDB needs a cgo build.
func (*Tool) OpenWriter(context.Context, string, string, []string, WriteMode) (*Writer, error) {
	return nil, errNoCgo
}

// Write fails.
func (*Writer) Write(context.Context, [][]any) error { return errNoCgo }

// Commit fails.
func (*Writer) Commit() error { return errNoCgo }

// Close does nothing.
func (*Writer) Close() {}

// Failure classifies the stub's errors as kind "config".
func (*Tool) Failure(_, _ context.Context, err error) types.Outcome {
	return conf.ConfigError("duckdb: %v", err)
}
