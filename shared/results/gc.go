package results

import (
	"context"
	"fmt"
	"net/url"

	"github.com/noetl/gcpengine/shared/types"
)

// HomeCell is the name of the home cell (Backend's), as Backends names it.
func (s *Store) HomeCell() string {
	if s.Cells != nil && len(s.Cells.Placements) > 0 {
		return s.Cells.Placements[0].Cell
	}
	return orDefault(s.Locator.Cell, DefaultPlacement)
}

// Backends returns every distinct backend of the Store by cell name (the
// home cell under its own name), for sweeps over all cells.
func (s *Store) Backends() map[string]Backend {
	out := map[string]Backend{s.HomeCell(): s.Backend}
	for name, b := range s.CellBackends {
		out[name] = b
	}
	return out
}

// RootPrefix is the prefix of every result key of this deployment's
// environment ("noetl/env=<env>/").
func (s *Store) RootPrefix() string {
	return "noetl/env=" + url.PathEscape(orDefault(s.Env, DefaultPlacement)) + "/"
}

// DeleteExecution deletes every result of an execution: the objects under
// its prefix in its home cell (ExecutionPrefix; GC by prefix, NoETL result storage RFC
// §5). tenant and project "" are the Locator's. It returns how many
// objects it deleted. Whether the execution may lose its results is the
// caller's decision (shared/operations/gc).
func (s *Store) DeleteExecution(ctx context.Context, tenant, project, executionID string) (int, error) {
	if executionID == "" {
		return 0, fmt.Errorf("%w: no execution id", ErrBadURI)
	}
	cell, prefix := s.ExecutionPrefix(types.ResultCoords{Tenant: tenant, Project: project, ExecutionID: executionID})
	return s.DeletePrefix(ctx, cell.Name, prefix)
}

// DeletePrefix deletes every object under prefix in a cell and returns
// how many it deleted.
func (s *Store) DeletePrefix(ctx context.Context, cell, prefix string) (int, error) {
	b := s.backendFor(cell)
	var keys []string
	if err := b.List(ctx, prefix, func(o ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		return 0, err
	}
	for i, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}
