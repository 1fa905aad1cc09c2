package results

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// Locator defaults.
const (
	// DefaultTenant replaces an empty ResultCoords.Tenant (seed 004
	// "Prerequisites": single-tenant "default/default" today).
	DefaultTenant = "default"
	// DefaultProject replaces an empty ResultCoords.Project.
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

// Locator turns result coordinates into names (seed 004 §4 "Result naming").
// It is pure: no I/O, no clock.
//
//   - Layer 1, LogicalURI: the stable, location-independent name that state,
//     dedup and replay key on.
//   - Layer 2, PhysicalKey: the object key in the cell's bucket, derived from
//     the coordinates plus this Locator's placement (Env, Region, Cell,
//     ShardCount) with zero central lookup.
//
// The zero Locator is usable: empty Env/Region/Cell become "default" and a
// ShardCount ≤ 0 becomes 16.
type Locator struct {
	Env        string // deployment environment, e.g. "dev", "prod"
	Region     string // e.g. "us-central1"
	Cell       string // e.g. "c1"
	ShardCount int    // number of shards; ≤ 0 means DefaultShardCount (16)
}

// LogicalURI returns the logical URI of a result (seed 004 §4 layer 1):
//
//	noetl://<tenant>/<project>/results/<execution_id>/<step>/<frame>/<row>/<attempt>
//
// Empty Tenant/Project become "default". Each text segment is path-escaped
// (url.PathEscape), so a step name containing "/" stays one segment;
// ParseLogicalURI reverses it when ExecutionID and Step are non-empty and
// Frame, Row, Attempt are ≥ 0. The result is deterministic in c.
func (l Locator) LogicalURI(c types.ResultCoords) string {
	tenant, project := tenantProject(c)
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
// encoded in s. Frame, Row and Attempt must be non-negative decimal
// integers; the "@<version>" suffix of seed 004's full grammar is not
// supported (LogicalURI never emits it). Errors wrap ErrBadURI.
func ParseLogicalURI(s string) (types.ResultCoords, error) {
	var c types.ResultCoords
	rest, ok := strings.CutPrefix(s, URIScheme+"://")
	if !ok {
		return c, fmt.Errorf("%w: %q: want scheme %s://", ErrBadURI, s, URIScheme)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 8 || parts[2] != "results" {
		return c, fmt.Errorf("%w: %q: want noetl://<tenant>/<project>/results/<execution_id>/<step>/<frame>/<row>/<attempt>", ErrBadURI, s)
	}
	text := make([]string, 0, 4)
	for _, i := range []int{0, 1, 3, 4} {
		v, err := url.PathUnescape(parts[i])
		if err != nil || v == "" {
			return c, fmt.Errorf("%w: %q: bad segment %q", ErrBadURI, s, parts[i])
		}
		text = append(text, v)
	}
	nums := make([]int, 0, 3)
	for _, p := range parts[5:] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return c, fmt.Errorf("%w: %q: bad number %q", ErrBadURI, s, p)
		}
		nums = append(nums, n)
	}
	c = types.ResultCoords{
		Tenant: text[0], Project: text[1], ExecutionID: text[2], Step: text[3],
		Frame: nums[0], Row: nums[1], Attempt: nums[2],
	}
	return c, nil
}

// Shard returns the home shard of a result (seed 004 §4 layer 2):
//
//	FNV-1a-32(tenant + project + execution_id) % shard_count
//
// with the plain concatenation of the three strings (tenant/project after
// defaulting) as the hash input. All results of one execution share a shard
// (execution affinity). The value is in [0, ShardCount).
func (l Locator) Shard(c types.ResultCoords) int {
	tenant, project := tenantProject(c)
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte(project))
	h.Write([]byte(c.ExecutionID))
	return int(h.Sum32() % uint32(l.shardCount()))
}

// PhysicalKey returns the object key of a result in its cell's bucket
// (seed 004 §4 layer 2, §7 key layout):
//
//	noetl/env=<env>/region=<region>/cell=<cell>/shard=<shard>/tenant=<tenant>/project=<project>/date=<YYYY-MM-DD>/execution=<execution_id>/results/<step>/<frame>/<row>/<attempt>.<ext>
//
// shard is Shard(c) zero-padded to 4 digits ("0007"). date is date's UTC
// calendar day: the date is not part of the logical URI, so the caller
// passes it (Store uses the time of the write, and carries the resulting
// key in the reference so readers never re-derive it). ext is the file
// extension without the dot ("feather", "json"). Text segments are
// path-escaped as in LogicalURI. The result is deterministic in its
// arguments.
func (l Locator) PhysicalKey(c types.ResultCoords, ext string, date time.Time) string {
	tenant, project := tenantProject(c)
	var b strings.Builder
	b.Grow(160 + len(tenant) + len(project) + len(c.ExecutionID) + len(c.Step))
	b.WriteString("noetl/env=")
	b.WriteString(url.PathEscape(orDefault(l.Env, DefaultPlacement)))
	b.WriteString("/region=")
	b.WriteString(url.PathEscape(orDefault(l.Region, DefaultPlacement)))
	b.WriteString("/cell=")
	b.WriteString(url.PathEscape(orDefault(l.Cell, DefaultPlacement)))
	fmt.Fprintf(&b, "/shard=%04d", l.Shard(c))
	b.WriteString("/tenant=")
	b.WriteString(url.PathEscape(tenant))
	b.WriteString("/project=")
	b.WriteString(url.PathEscape(project))
	b.WriteString("/date=")
	b.WriteString(date.UTC().Format(time.DateOnly))
	b.WriteString("/execution=")
	b.WriteString(url.PathEscape(c.ExecutionID))
	b.WriteString("/results/")
	writeCycle(&b, c)
	b.WriteByte('.')
	b.WriteString(ext)
	return b.String()
}

// writeCycle writes the cycle coordinates both names end with:
// <step>/<frame>/<row>/<attempt> (seed 004 §4).
func writeCycle(b *strings.Builder, c types.ResultCoords) {
	b.WriteString(url.PathEscape(c.Step))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Frame))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Row))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(c.Attempt))
}

func (l Locator) shardCount() int {
	if l.ShardCount <= 0 {
		return DefaultShardCount
	}
	return l.ShardCount
}

func tenantProject(c types.ResultCoords) (string, string) {
	return orDefault(c.Tenant, DefaultTenant), orDefault(c.Project, DefaultProject)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
