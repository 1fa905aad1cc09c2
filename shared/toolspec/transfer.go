package toolspec

// Transfer is the configuration of kind transfer: rows copied from a source to a target (noetl-tools TransferConfig).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type Transfer struct {
	Source    map[string]any `json:"source,omitempty" required:"source" doc:"The source {type: http|postgres|duckdb, ...}."`
	Target    map[string]any `json:"target,omitempty" required:"target" doc:"The target {type: postgres|duckdb, table, mode, ...}."`
	ChunkSize any            `json:"chunk_size,omitempty" doc:"Rows per chunk."`
	Mode      string         `json:"mode,omitempty" enum:"append,replace,upsert" doc:"How rows are written: append, replace or upsert."`
	Direction any            `json:"direction,omitempty" doc:"NoETL: the transfer's direction (e.g. http_to_postgres)."`
}

// Kind implements Spec.
func (Transfer) Kind() string { return "transfer" }
