package engine

import "github.com/noetl/gcpengine/shared/dsl"

// arcOn returns the boundary event an arc listens to (dsl.ArcOnSuccess:
// the step's success).
func arcOn(a *dsl.Arc) dsl.ArcOn { return a.On }
