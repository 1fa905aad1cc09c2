//go:build !cgo

package duckdb

import (
	"context"

	"github.com/noetl/gcpengine/shared/tools/internal/conf"
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
