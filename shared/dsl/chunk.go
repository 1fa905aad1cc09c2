package dsl

import "go.yaml.in/yaml/v3"

// chunkSize reads loop.spec.chunk_size or its alias loop.spec.batch: the
// number of items one batch of a distributed loop may carry (NoETL's
// chunk_size; Step Functions' Distributed Map calls it an item batcher's
// MaxItemsPerBatch). It must be a positive integer; giving both spellings
// is an error that keeps chunk_size.
func (l *loader) chunkSize(lp *Loop, loop map[string]entry, e entry, p string) {
	if e.key == "batch" {
		if sm, ok := loop["spec"]; ok && hasKey(sm.v, "chunk_size") {
			l.errf(e.k, p, "loop.spec has both chunk_size and batch (its alias): keep chunk_size")
			return
		}
	}
	d := deref(e.v)
	if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() != "!!int" {
		l.errf(e.v, p, "loop.spec.%s must be a positive integer (items per batch), got %s", e.key, describe(d))
		return
	}
	var i int
	if err := d.Decode(&i); err != nil || i < 1 {
		l.errf(e.v, p, "loop.spec.%s must be a positive integer (items per batch), got %s", e.key, clip(d.Value))
		return
	}
	lp.ChunkSize = i
}
