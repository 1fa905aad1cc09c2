// Package planes holds no code: its test is the compile-time boundary
// between the engine's two planes (docs "Architecture": "the planes are
// separate at compile time too"). The test reads the import graph of the
// builds that ship — the function build (the module root package the Cloud
// Functions buildpack compiles), the runner binary (runner/), the pure
// engine (shared/engine) and the CLI (cmd/noetl) — with `go list
// -deps -json` and fails when one of them links a package its plane must
// not hold, printing the import chain that brings it in.
//
// It lives in a package of its own, under shared/ beside the packages whose
// layering it checks, so that it imports none of them: the test only runs
// the go command, compiles in a moment and is run by `go test ./shared/...`
// like every other package test.
package planes
