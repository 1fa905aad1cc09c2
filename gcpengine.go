// Package gcpengine is the module's root package, the one the Cloud
// Functions (gen2) Go buildpack builds: the buildpack generates a main
// package that blank-imports the package at the module root and calls
// funcframework.Start, and FUNCTION_TARGET (the entry point: api, emit,
// execute, route, materialize, dispatch or subscribe) picks the function registered
// under that name. Importing the seven function packages here registers all
// of them (each registers itself in init with functions.HTTP or
// functions.CloudEvent). The direct import of the functions-framework
// "functions" package makes the buildpack use its declarative template
// (blank import + Start) instead of calling gcpengine.<FUNCTION_TARGET>.
//
// The list of functions is shared/deploy.Functions; deploy's tests build
// this package the way the buildpack does and serve each function.
package gcpengine

import (
	_ "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	_ "github.com/noetl/gcpengine/functions/api"
	_ "github.com/noetl/gcpengine/functions/dispatch"
	_ "github.com/noetl/gcpengine/functions/emit"
	_ "github.com/noetl/gcpengine/functions/execute"
	_ "github.com/noetl/gcpengine/functions/materialize"
	_ "github.com/noetl/gcpengine/functions/route"
	_ "github.com/noetl/gcpengine/functions/subscribe"
)
