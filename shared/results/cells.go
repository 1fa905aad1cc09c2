package results

// The cell registry (NoETL result storage RFC §4.3): the small, slow-changing map from
// cells to where their results live, and from (execution creation time,
// shard) to cell. It is the only lookup the tier needs beyond the
// logical URI, and it is configuration (NOETL_RESULT_CELLS_FILE), served
// read-only by the api (GET /cells).

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Cell is one cell of the deployment: the bucket its results live in.
type Cell struct {
	// Name is the cell's name (the key's cell= segment).
	Name string `json:"name" yaml:"name"`
	// Provider is the object store: "gcs" (the only one).
	Provider string `json:"provider" yaml:"provider"`
	// Bucket is the cell's bucket ("" in a Locator without a map: the
	// Store's Backend).
	Bucket string `json:"bucket" yaml:"bucket"`
	// Endpoint is the object store's endpoint ("" = the provider's
	// default; the local stack's STORAGE_EMULATOR_HOST applies).
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	// Region is the cell's region (the key's region= segment).
	Region string `json:"region" yaml:"region"`
}

// Placement is one epoch of the cell map: the results of an execution
// created at or after Since (and before the next epoch's Since) live in
// Shards[shard] if its shard is listed, else in Cell. Epochs are how a
// map moves shards between cells without moving what was written: an
// execution keeps the cell of the epoch it was created in, so every
// reference and every URN written before a move still derives its key.
type Placement struct {
	// Since is the first execution creation time (types.IDTime) the
	// epoch places; the first epoch's Since is ignored (it places every
	// execution created before the second).
	Since time.Time `json:"since" yaml:"since"`
	// Cell is the epoch's default cell.
	Cell string `json:"cell" yaml:"cell"`
	// Shards places single shards (by number) in other cells.
	Shards map[int]string `json:"shards,omitempty" yaml:"shards,omitempty"`
}

// CellMap is the deployment's cell registry: its cells and the epochs that
// place executions' shards in them. Build it with LoadCellMap or
// SingleCell; a CellMap is immutable once built and safe for concurrent
// use.
type CellMap struct {
	// Cells lists the cells, by unique name.
	Cells []Cell `json:"cells" yaml:"cells"`
	// Placements are the epochs, in ascending Since order (at least one).
	Placements []Placement `json:"placements" yaml:"placements"`
}

// SingleCell returns the map of a single-cell deployment: every result in
// cell name ("default" when empty) of region, bucket bucket.
func SingleCell(name, region, bucket string) *CellMap {
	name = orDefault(name, DefaultPlacement)
	return &CellMap{
		Cells:      []Cell{{Name: name, Provider: "gcs", Bucket: bucket, Region: orDefault(region, DefaultPlacement)}},
		Placements: []Placement{{Cell: name}},
	}
}

// LoadCellMap reads a cell map from a YAML or JSON file (JSON is YAML)
// and validates it (CellMap.Validate against shardCount, ≤ 0 meaning
// DefaultShardCount):
//
//	cells:
//	  - {name: c1, provider: gcs, bucket: acme-results-c1, region: us-central1}
//	  - {name: c2, provider: gcs, bucket: acme-results-c2, region: europe-west1}
//	placements:
//	  - {cell: c1}
//	  - {since: 2026-07-01T00:00:00Z, cell: c1, shards: {3: c2, 9: c2}}
//
// Errors name the file and the problem.
func LoadCellMap(path string, shardCount int) (*CellMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: cell map: %w", err)
	}
	var m CellMap
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("results: cell map %s: %w", path, err)
	}
	if err := m.Validate(shardCount); err != nil {
		return nil, fmt.Errorf("results: cell map %s: %w", path, err)
	}
	return &m, nil
}

// Validate checks the map: at least one cell and one placement; cells
// with unique non-empty names made of [A-Za-z0-9_-], provider "gcs"
// (empty means gcs), a bucket and a region; placements in strictly
// ascending Since order naming known cells, with shard numbers in
// [0, shardCount). It sorts nothing and fills Provider defaults in place.
func (m *CellMap) Validate(shardCount int) error {
	if shardCount <= 0 {
		shardCount = DefaultShardCount
	}
	if len(m.Cells) == 0 {
		return errors.New("no cells")
	}
	names := map[string]bool{}
	for i := range m.Cells {
		c := &m.Cells[i]
		if c.Name == "" || strings.Trim(c.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return fmt.Errorf("cell %d: name %q (want [A-Za-z0-9_-]+)", i, c.Name)
		}
		if names[c.Name] {
			return fmt.Errorf("cell %q listed twice", c.Name)
		}
		names[c.Name] = true
		if c.Provider == "" {
			c.Provider = "gcs"
		}
		if c.Provider != "gcs" {
			return fmt.Errorf("cell %q: provider %q (only gcs)", c.Name, c.Provider)
		}
		if c.Bucket == "" || c.Region == "" {
			return fmt.Errorf("cell %q: bucket and region are required", c.Name)
		}
	}
	if len(m.Placements) == 0 {
		return errors.New("no placements")
	}
	for i, p := range m.Placements {
		if i > 0 && !p.Since.After(m.Placements[i-1].Since) {
			return fmt.Errorf("placement %d: since %s is not after the previous one's", i, p.Since.Format(time.RFC3339))
		}
		if !names[p.Cell] {
			return fmt.Errorf("placement %d: unknown cell %q", i, p.Cell)
		}
		for s, c := range p.Shards {
			if s < 0 || s >= shardCount {
				return fmt.Errorf("placement %d: shard %d out of [0, %d)", i, s, shardCount)
			}
			if !names[c] {
				return fmt.Errorf("placement %d: shard %d: unknown cell %q", i, s, c)
			}
		}
	}
	return nil
}

// Cell returns the cell named name.
func (m *CellMap) Cell(name string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Name == name {
			return c, true
		}
	}
	return Cell{}, false
}

// CellOfBucket returns the cell whose bucket is bucket.
func (m *CellMap) CellOfBucket(bucket string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Bucket == bucket {
			return c, true
		}
	}
	return Cell{}, false
}

// CellAt returns the cell that holds shard for an execution created at
// t: the placement epoch in effect at t (the last with Since ≤ t; the
// first for anything earlier), its shard override, else its cell.
func (m *CellMap) CellAt(t time.Time, shard int) Cell {
	i := sort.Search(len(m.Placements), func(i int) bool { return m.Placements[i].Since.After(t) }) - 1
	if i < 0 {
		i = 0
	}
	p := m.Placements[i]
	name := p.Cell
	if c, ok := p.Shards[shard]; ok {
		name = c
	}
	c, _ := m.Cell(name)
	return c
}

// Names returns the cells' names, sorted.
func (m *CellMap) Names() []string {
	out := make([]string, len(m.Cells))
	for i, c := range m.Cells {
		out[i] = c.Name
	}
	slices.Sort(out)
	return out
}

// View is the registry as GET /cells serves it: {"cells": [...],
// "placements": [{"since", "cell", "shards": {"3": "c2"}}]} with times in
// RFC 3339.
func (m *CellMap) View() map[string]any {
	cells := make([]any, len(m.Cells))
	for i, c := range m.Cells {
		v := map[string]any{"name": c.Name, "provider": c.Provider, "bucket": c.Bucket, "region": c.Region}
		if c.Endpoint != "" {
			v["endpoint"] = c.Endpoint
		}
		cells[i] = v
	}
	pls := make([]any, len(m.Placements))
	for i, p := range m.Placements {
		v := map[string]any{"cell": p.Cell}
		if i > 0 {
			v["since"] = p.Since.UTC().Format(time.RFC3339)
		}
		if len(p.Shards) > 0 {
			sh := map[string]any{}
			for s, c := range p.Shards {
				sh[strconv.Itoa(s)] = c
			}
			v["shards"] = sh
		}
		pls[i] = v
	}
	return map[string]any{"cells": cells, "placements": pls}
}
