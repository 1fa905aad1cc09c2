// Package wire holds the shapes of the HTTP API's operator requests and
// reports that the CLI (cmd/noetl) encodes and decodes: the
// files sent with a playbook (POST /executions), and what a rebuild, a
// results GC and a scrub report. The packages that build them (store,
// launch, replay, operations/gc) declare these types as aliases of the ones
// here, so the api and the CLI share one definition while the CLI links
// none of those packages' cloud clients (the boundary test, shared/planes:
// "the CLI links no cloud client"). It imports the standard library only.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Digest is the lower-case hex sha256 of content (ExecutionFile.SHA256;
// launch.Digest is this function).
func Digest(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

// ExecutionFile is one file of Execution.Files: its text and the
// lower-case hex sha256 of it (checked by the worker before the file is
// used).
type ExecutionFile struct {
	SHA256  string `json:"sha256"`
	Content string `json:"content"`
}

// RebuildReport is what a rebuild did and what it could not do.
type RebuildReport struct {
	ExecutionID string `json:"execution_id"`
	// SeekTime is the time the subscription was sought to (UTC; RFC 3339
	// on the wire).
	SeekTime time.Time `json:"seek_time"`
	// Scanned counts the messages pulled (of every execution).
	Scanned int `json:"scanned"`
	// Batches counts the distinct batches of the execution found.
	Batches int `json:"batches"`
	// Written counts the batches written (absent from the read model);
	// Present those that were already there.
	Written int `json:"written"`
	Present int `json:"present"`
	// WrittenEvents counts the events of the written batches (batches
	// that carry only operation counts have none).
	WrittenEvents int `json:"written_events"`
	// Refused counts the execution's messages that did not verify or
	// decode (not written).
	Refused int `json:"refused"`
	// EventsBefore and Events are the read model's event counts before
	// and after the rebuild.
	EventsBefore int `json:"events_before"`
	Events       int `json:"events"`
	// Missing lists what the rebuild could not rebuild (empty: the log is
	// complete as far as the checks in the package documentation see).
	Missing []string `json:"missing"`
	// Complete is len(Missing) == 0.
	Complete bool `json:"complete"`
}

// GCReport is what a sweep did (or, dry, would do).
type GCReport struct {
	DryRun bool `json:"dry_run"`
	// Objects and Bytes are what was listed.
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Deleted and DeletedBytes are what was (or would be) deleted.
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	// Executions counts executions by verdict.
	Executions map[string]int `json:"executions"`
	// DeletedExecutions lists the executions whose results were deleted
	// whole (at most 1000).
	DeletedExecutions []string `json:"deleted_executions,omitempty"`
}

// LostResult is one result the scrub found lost.
type LostResult struct {
	ExecutionID string `json:"execution_id"`
	URI         string `json:"uri"`
	Key         string `json:"key"`
	// Generation is the generation its reference records (0: none).
	Generation int64 `json:"generation,omitempty"`
	// Lost says how (results.LostKind: gone, replaced, changed,
	// undecodable); Message is the read's error.
	Lost    string `json:"lost"`
	Message string `json:"message"`
}

// ScrubReport is what a scrub read and found.
type ScrubReport struct {
	// Executions counts the executions whose logs were read.
	Executions int `json:"executions"`
	// Results counts the distinct stored results their logs reference;
	// Intact those whose object was read and matched; Bytes what was read.
	Results int   `json:"results"`
	Intact  int   `json:"intact"`
	Bytes   int64 `json:"bytes"`
	// Unchecked counts references that record neither a digest nor a
	// generation (nothing to compare: a bare key handed to an artifact
	// task).
	Unchecked int `json:"unchecked"`
	// Lost lists the results found lost (each also recorded as a
	// result.lost event when the Scrubber has a Bus).
	Lost []LostResult `json:"lost,omitempty"`
	// NoRecord lists executions with objects in the tier but no record
	// (GC's orphans: nothing references their objects any more).
	NoRecord []string `json:"no_record,omitempty"`
	// Check is the digest compared.
	Check string `json:"check"`
}
