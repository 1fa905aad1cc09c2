// Package results is the engine's result tier (NoETL result storage RFC "Event WAL +
// derivable storage", README "Architecture" "Storage"): task results whose JSON
// encoding is over the inline budget are written to object storage (GCS)
// and replaced, in execution state and events, by a small reference map
//
//	{"$ref": {"uri": "noetl://…", "key": "noetl/env=…/….feather", "format": "feather", "bytes": 123456, "rows": 10000},
//	 "extracted": {"rows": 10000, "columns": ["a", "b"], "first": {…}}}
//
// that carries the stable logical URI (NoETL result storage RFC §4, layer 1), the physical
// object key derived from it (§4, layer 2: an FNV-1a shard, no central
// lookup), and a bounded `extracted` predicate block (≤ 4 KB, §5) so that
// routing (`when:`/`set:`) never needs a fetch. Tabular results are stored
// as Arrow Feather v2 (the Arrow IPC file format, readable by pyarrow's
// feather.read_table); everything else as JSON (§5, OQ3).
//
// The package has three parts, one job each:
//   - Locator: pure naming (LogicalURI, PhysicalKey, ParseLogicalURI).
//   - Backend: a dumb byte store (Put/Get/Exists), the contract: the GCS
//     driver is its own package (shared/results/gcsresults), so this one
//     links no cloud client; the in-memory driver (NewMemory) stays here,
//     beside the contract, for the tier's own tests; drivers never retry and callers branch on the sentinel
//     ErrNotFound, never on messages. resultstest.BackendSuite is the
//     conformance suite every driver runs (resultstest.ObjectSuite, its
//     per-object part without List and Delete, for drivers holding one
//     right per object: package grant's signed URLs).
//   - Store: the policy (Offload over budget, Resolve references back into
//     values, IsRef). It caches nothing. Every object it writes is created
//     once (once.go: a second writer of the same key names identical
//     bytes, writes a fresh @version, or, streaming, adopts the object).
//   - Ownership (owner.go): Resolve loads a reference only for the reading
//     execution (Reader, carried by the context), its parent and its
//     children, and checks the object against the digest its reference
//     records (digest.go: the sha256 by default, or the crc32c).
package results
