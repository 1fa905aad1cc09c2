package runnerproto

import (
	"time"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// SinkKinds are the runner kinds that stream a table result into the tier
// (results.SinkFrom): an attempt of one of them gets a write grant.
var SinkKinds = []string{tools.KindDuckDB}

// BarrierKinds are the runner kinds that commit their side effect with a
// barrier record (tools.BarrierExecutor): a barriered attempt of one of
// them gets the grants of its result object (results.AttemptObject).
var BarrierKinds = []string{tools.KindPostgres}

// MaxReadGrants is the most stored results one attempt may name; a task
// naming more fails with a config error.
const MaxReadGrants = 64

// DefaultMaxObject is the largest object a write grant admits when the
// Granter sets none (4 GiB, NOETL_RESULT_MAX_OBJECT_MB's default).
const DefaultMaxObject int64 = 4 << 30

// ResultGrants are the result-tier objects an attempt may touch
// (Request.Results).
type ResultGrants struct {
	// Read are the stored results the task names, each with its GET grant.
	Read []ReadGrant `json:"read,omitempty"`
	// Write is the task's own result object and its PUT grant (nil: the
	// task's kind writes none).
	Write *WriteGrant `json:"write,omitempty"`
	// Attempt is the result object of a barriered attempt of a
	// BarrierKinds kind (results.AttemptObject; nil: none).
	Attempt *AttemptGrant `json:"attempt,omitempty"`
	// ReadCheck is the digest the runner's reads check: the control
	// plane's (results.Store.ReadCheck; "" is results.ReadCheckSHA256).
	ReadCheck results.ReadCheck `json:"read_check,omitempty"`
}

// ReadGrant is one stored result the task may read.
type ReadGrant struct {
	// URI is the noetl:// URN the task names it by ("" when it names it
	// by its reference only).
	URI string `json:"uri,omitempty"`
	// Ref is the reference's inner "$ref" map (uri, key, cell, bucket,
	// format, bytes, rows, sha256, crc32c), as the control plane resolved
	// it.
	Ref map[string]any `json:"ref"`
	// Grant is the signed GET of Ref's object.
	Grant grant.Grant `json:"grant"`
}

// WriteGrant is the object of the task's own result: the sink the worker
// would have used in the control plane (results.Destination), and the
// signed PUT of its key.
type WriteGrant struct {
	// Coords are the result's coordinates (tenant and project filled in).
	Coords types.ResultCoords `json:"coords"`
	// Env, Tenant, Project and ShardCount are the deployment's locator
	// settings (results.Locator): the runner derives Grant.Key from
	// Coords with them and Cell.
	Env        string `json:"env,omitempty"`
	Tenant     string `json:"tenant,omitempty"`
	Project    string `json:"project,omitempty"`
	ShardCount int    `json:"shard_count,omitempty"`
	// Cell is the result's home cell.
	Cell results.Cell `json:"cell"`
	// Limit is the result's inline budget in bytes (results.OffloadOptions
	// Limit, resolved: 0 stores any table, > 0 keeps a smaller one
	// inline); Compression, TTLSeconds and BatchRows are the output
	// block's other store settings.
	Limit       int    `json:"limit"`
	Compression string `json:"compression,omitempty"`
	TTLSeconds  int64  `json:"ttl_s,omitempty"`
	BatchRows   int    `json:"batch_rows,omitempty"`
	// IssuedAt is when the grant was signed: the runner's tier dates the
	// ttl expiry from it, so the expiry it records is the one signed.
	IssuedAt time.Time `json:"issued_at"`
	// Grant is the signed PUT of the object. It creates the object only
	// where none is (grant.IfGenerationMatchHeader "0").
	Grant grant.Grant `json:"grant"`
	// ReadBack is the signed GET of the same object: when another
	// delivery of the unit stored it first (the PUT answers 412), the
	// runner's sink reads it to take it as the result (results once.go).
	ReadBack grant.Grant `json:"read_back"`
}

// AttemptGrant is the result object of a barriered attempt
// (results.AttemptCoords): a PUT that replaces it (bounded like every
// write) and a GET.
type AttemptGrant struct {
	Put grant.Grant `json:"put"`
	Get grant.Grant `json:"get"`
}
