package planes

import "testing"

// googleErrorTypes are the Google clients' error types errs.CodeOf reads
// only through shared/errs/googleerr (its registration).
var googleErrorTypes = []string{"google.golang.org/api/googleapi", "google.golang.org/grpc/status"}

// TestGoogleErrorsAreCoded: shared/errs links only the standard library,
// and errs.CodeOf classifies a gRPC status or a googleapi.Error only once
// shared/errs/googleerr is linked (its init registers the mapping). So
// every build that links those error types — a build that can meet them —
// must link googleerr, or a raw NotFound from Firestore or GCS would be
// Unknown there, and retried. The build roots are the shipped builds and
// the drivers whose errors reach the retry policy.
func TestGoogleErrorsAreCoded(t *testing.T) {
	roots := []string{
		rootFunctions, rootRunner, rootEngine, rootCLI,
		module + "/shared/store/firestorestore",
		module + "/shared/bus/pubsubbus",
		module + "/shared/tasks/cloudtasks",
		module + "/shared/results/gcsresults",
		module + "/shared/credentials/credfirestore",
		module + "/shared/credentials/credsecretmanager",
		module + "/shared/subscribe/pubsubpull",
		module + "/shared/subscribe/gcsspool",
		module + "/runner/kinds/gcs",
	}
	g := loadGraph(t, append(roots, module+"/shared/errs")...)
	if found := reach(g, module+"/shared/errs", "google.golang.org", nil); len(found) > 0 {
		t.Errorf("shared/errs links a Google library, e.g.\n\t%s", chainString(found[0]))
	}
	// errs is imported by every layer, the pure engine included: it links
	// no HTTP stack either (its HTTP statuses are plain numbers).
	for _, r := range []string{module + "/shared/errs", rootEngine} {
		if found := reach(g, r, "net/http", nil); len(found) > 0 {
			t.Errorf("%s links net/http, e.g.\n\t%s", short(r), chainString(found[0]))
		}
	}
	linked := 0
	for _, r := range roots {
		var meets []string
		for _, ty := range googleErrorTypes {
			if found := reach(g, r, ty, nil); len(found) > 0 {
				meets = found[0]
			}
		}
		if meets == nil {
			continue
		}
		linked++
		if len(reach(g, r, module+"/shared/errs/googleerr", nil)) == 0 {
			t.Errorf("%s links the Google clients' errors (%s) but not shared/errs/googleerr: import it (blank) in the driver", short(r), chainString(meets))
		}
	}
	if linked < 3 {
		t.Errorf("only %d roots link the Google error types: the check would pass vacuously", linked)
	}
}
