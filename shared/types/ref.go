package types

// ResultRefKey marks a result reference: a map[string]any with this key
// stands for a value stored in the results tier (NoETL result storage RFC
// §5; shared/results.Store.Offload builds the full shape and re-exports
// this key as results.RefKey). It lives in the leaf package so that the
// pure engine can recognise a reference without linking the results tier
// and its cloud clients.
const ResultRefKey = "$ref"

// ResultFormatFeather is the "$ref.format" of a tabular result stored as
// Arrow Feather v2 (NoETL result storage RFC §5; results.FormatFeather is
// this constant).
const ResultFormatFeather = "feather"

// IsResultRef reports whether v is a result reference: a map[string]any
// with a ResultRefKey key (results.IsRef is this function).
func IsResultRef(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[ResultRefKey]
	return ok
}
