package engine

import "github.com/noetl/gcpengine/shared/dsl"

// arcOn returns the boundary event an arc listens to ("" = success).
func arcOn(a *dsl.Arc) string { return a.On }
