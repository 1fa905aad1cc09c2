package results

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// Locator defaults.
const (
	// DefaultTenant replaces an empty ResultCoords.Tenant when the
	// Locator names no tenant (NoETL result storage RFC "Prerequisites": single-tenant
	// "default/default").
	DefaultTenant = "default"
	// DefaultProject replaces an empty ResultCoords.Project likewise.
	DefaultProject = "default"
	// DefaultShardCount is the shard count used when Locator.ShardCount ≤ 0.
	DefaultShardCount = 16
	// DefaultPlacement replaces an empty Locator.Env, .Region or .Cell in
	// physical keys.
	DefaultPlacement = "default"
	// URIScheme is the scheme of logical result URIs.
	URIScheme = "noetl"
)

// ErrBadURI is returned (wrapped) by ParseLogicalURI for a string that is not
// a logical result URI of the shape LogicalURI produces.
// Code errs.InvalidArgument.
var ErrBadURI = errs.Sentinel(errs.InvalidArgument, "results: not a logical result URI")

// versionPattern is the shape of an @<version> suffix.
var versionPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Locator turns result coordinates into names (NoETL result storage RFC §4 "Result naming").
// It is pure: no I/O, no clock.
//
//   - Layer 1, LogicalURI: the stable, location-independent name that state,
//     dedup and replay key on.
//   - Layer 2, Place and PhysicalKey: the cell, shard and object key of a
//     result, derived from the URI's coordinates and the deployment's cell
//     map (Cells) with zero central lookup. No write time enters the key:
//     its date segment is the execution's creation date, read from the
//     execution id (types.IDTime), so a redelivery on another day writes
//     the same object and any reader recomputes the key from the URI.
//
// The zero Locator is usable: one cell named "default" in region
// "default", tenant and project "default", 16 shards.
type Locator struct {
	Env    string // deployment environment, e.g. "dev", "prod"
	Region string // the single cell's region when Cells is nil
	Cell   string // the single cell's name when Cells is nil
	// ShardCount is the number of shards; ≤ 0 means DefaultShardCount (16).
	ShardCount int
	// Tenant and Project replace empty ResultCoords.Tenant/Project
	// (the deployment's configuration, NOETL_TENANT and
	// NOETL_TENANT_PROJECT); "" means DefaultTenant/DefaultProject.
	Tenant, Project string
	// Cells is the deployment's cell map (cells.go); nil means one cell
	// named Cell in Region.
	Cells *CellMap
}

// LogicalURI returns the logical URI of a result (NoETL result storage RFC §4 layer 1):
//
//	noetl://<tenant>/<project>/results/<execution_id>/<step>/<frame>/<row>/<attempt>[@<version>]
//
// Empty Tenant/Project become the Locator's (else "default"). Each text
// segment is path-escaped (url.PathEscape), so a step name containing "/"
// stays one segment; ParseLogicalURI reverses it when ExecutionID and Step
// are non-empty, Frame, Row, Attempt are ≥ 0 and Version is empty or
// matches [A-Za-z0-9._-]{1,64}. The result is deterministic in c.
func (l Locator) LogicalURI(c types.ResultCoords) string {
	tenant, project := l.tenantProject(c)
	var b strings.Builder
	b.Grow(64 + len(tenant) + len(project) + len(c.ExecutionID) + len(c.Step))
	b.WriteString(URIScheme)
	b.WriteString("://")
	b.WriteString(url.PathEscape(tenant))
	b.WriteByte('/')
	b.WriteString(url.PathEscape(project))
	b.WriteString("/results/")
	b.WriteString(url.PathEscape(c.ExecutionID))
	b.WriteByte('/')
	writeCycle(&b, c)
	return b.String()
}

// ParseLogicalURI is the inverse of LogicalURI: it returns the coordinates
// encoded in s (Tenant and Project as written, never defaulted). Frame,
// Row and Attempt must be non-negative decimal integers without leading
// zeros; an "@<version>" suffix of the attempt segment must match
// [A-Za-z0-9._-]{1,64}. Errors wrap ErrBadURI.
func ParseLogicalURI(s string) (types.ResultCoords, error) {
	var c types.ResultCoords
	rest, ok := strings.CutPrefix(s, URIScheme+"://")
	if !ok {
		return c, fmt.Errorf("%w: %q: want scheme %s://", ErrBadURI, s, URIScheme)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 8 || parts[2] != "results" {
		return c, fmt.Errorf("%w: %q: want noetl://<tenant>/<project>/results/<execution_id>/<step>/<frame>/<row>/<attempt>[@<version>]", ErrBadURI, s)
	}
	if a, v, found := strings.Cut(parts[7], "@"); found {
		if !versionPattern.MatchString(v) {
			return c, fmt.Errorf("%w: %q: bad version %q (want [A-Za-z0-9._-], at most 64)", ErrBadURI, s, v)
		}
		parts[7], c.Version = a, v
	}
	text := make([]string, 0, 4)
	for _, i := range []int{0, 1, 3, 4} {
		v, err := url.PathUnescape(parts[i])
		if err != nil || v == "" {
			return types.ResultCoords{}, fmt.Errorf("%w: %q: bad segment %q", ErrBadURI, s, parts[i])
		}
		text = append(text, v)
	}
	nums := make([]int, 0, 3)
	for _, p := range parts[5:] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return types.ResultCoords{}, fmt.Errorf("%w: %q: bad number %q", ErrBadURI, s, p)
		}
		nums = append(nums, n)
	}
	c.Tenant, c.Project, c.ExecutionID, c.Step = text[0], text[1], text[2], text[3]
	c.Frame, c.Row, c.Attempt = nums[0], nums[1], nums[2]
	return c, nil
}

// Shard returns the home shard of a result (NoETL result storage RFC §4 layer 2):
//
//	FNV-1a-32(tenant + project + execution_id) % shard_count
//
// with the plain concatenation of the three strings (tenant/project after
// defaulting) as the hash input. All results of one execution share a shard
// (execution affinity). The value is in [0, ShardCount).
func (l Locator) Shard(c types.ResultCoords) int {
	tenant, project := l.tenantProject(c)
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte(project))
	h.Write([]byte(c.ExecutionID))
	return int(h.Sum32() % uint32(l.shardCount()))
}

// Place returns the home cell and shard of a result: the shard as Shard,
// the cell as the cell map places that shard for an execution created at
// types.IDTime(c.ExecutionID) (CellMap.CellAt; the single cell when Cells
// is nil). A pure function of c and the map.
func (l Locator) Place(c types.ResultCoords) (Cell, int) {
	shard := l.Shard(c)
	if l.Cells == nil {
		return l.singleCell(), shard
	}
	return l.Cells.CellAt(types.IDTime(c.ExecutionID), shard), shard
}

// singleCell is the cell of a Locator without a cell map.
func (l Locator) singleCell() Cell {
	return Cell{Name: orDefault(l.Cell, DefaultPlacement), Region: orDefault(l.Region, DefaultPlacement)}
}

// PhysicalKey returns the object key of a result in its home cell's
// bucket (NoETL result storage RFC §4 layer 2, §7 key layout):
//
//	noetl/env=<env>/region=<region>/cell=<cell>/shard=<shard>/tenant=<tenant>/project=<project>/date=<YYYY-MM-DD>/execution=<execution_id>/results/<step>/<frame>/<row>/<attempt>[@<version>].<ext>
//
// region and cell are Place's; shard is zero-padded to 4 digits ("0007");
// date is the UTC day of types.IDTime(c.ExecutionID) (the execution's
// creation day for the ids launch.NewID draws). ext is the file extension
// without the dot ("feather", "json"). Text segments are path-escaped as
// in LogicalURI. The key is a pure function of the logical URI, ext and
// the cell map: a reader holding only the URI recomputes it.
func (l Locator) PhysicalKey(c types.ResultCoords, ext string) string {
	cell, shard := l.Place(c)
	return l.keyIn(c, cell, shard, ext)
}

// keyIn is PhysicalKey for a given cell and shard.
func (l Locator) keyIn(c types.ResultCoords, cell Cell, shard int, ext string) string {
	var b strings.Builder
	b.Grow(160 + len(c.ExecutionID) + len(c.Step))
	b.WriteString(l.executionPrefix(c, cell, shard))
	b.WriteString("results/")
	writeCycle(&b, c)
	b.WriteByte('.')
	b.WriteString(ext)
	return b.String()
}

// ExecutionPrefix returns the object prefix under which every result of
// execution c.ExecutionID lives in its home cell (PhysicalKey up to and
// including "execution=<id>/"), with that cell: deleting everything under
// it deletes the execution's results (GC by prefix, NoETL result storage RFC §5).
func (l Locator) ExecutionPrefix(c types.ResultCoords) (Cell, string) {
	cell, shard := l.Place(c)
	return cell, l.executionPrefix(c, cell, shard)
}

func (l Locator) executionPrefix(c types.ResultCoords, cell Cell, shard int) string {
	tenant, project := l.tenantProject(c)
	var b strings.Builder
	b.Grow(160 + len(tenant) + len(project) + len(c.ExecutionID))
	b.WriteString("noetl/env=")
	b.WriteString(url.PathEscape(orDefault(l.Env, DefaultPlacement)))
	b.WriteString("/region=")
	b.WriteString(url.PathEscape(orDefault(cell.Region, DefaultPlacement)))
	b.WriteString("/cell=")
	b.WriteString(url.PathEscape(orDefault(cell.Name, DefaultPlacement)))
	fmt.Fprintf(&b, "/shard=%04d", shard)
	b.WriteString("/tenant=")
	b.WriteString(url.PathEscape(tenant))
	b.WriteString("/project=")
	b.WriteString(url.PathEscape(project))
	b.WriteString("/date=")
	b.WriteString(types.IDTime(c.ExecutionID).Format(time.DateOnly))
	b.WriteString("/execution=")
	b.WriteString(url.PathEscape(c.ExecutionID))
	b.WriteByte('/')
	return b.String()
}

// writeCycle writes the cycle coordinates both names end with:
// <step>/<frame>/<row>/<attempt>[@<version>] (NoETL result storage RFC §4).
func writeCycle(b *strings.Builder, c types.ResultCoords) {
	b.WriteString(url.PathEscape(c.Step))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Frame))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Row))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Attempt))
	if c.Version != "" {
		b.WriteByte('@')
		b.WriteString(c.Version)
	}
}

func (l Locator) shardCount() int {
	if l.ShardCount <= 0 {
		return DefaultShardCount
	}
	return l.ShardCount
}

// tenantProject returns c's tenant and project, defaulted to the
// Locator's, then to "default".
func (l Locator) tenantProject(c types.ResultCoords) (string, string) {
	return orDefault(c.Tenant, orDefault(l.Tenant, DefaultTenant)), orDefault(c.Project, orDefault(l.Project, DefaultProject))
}

// Defaulted returns c with Tenant and Project filled in as LogicalURI
// fills them.
func (l Locator) Defaulted(c types.ResultCoords) types.ResultCoords {
	c.Tenant, c.Project = l.tenantProject(c)
	return c
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
