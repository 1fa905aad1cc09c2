package subscription

import (
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/noetl/gcpengine/emulators/pubsubrest"
)

// fakePubSub is pstest's in-memory Pub/Sub (Addr: its gRPC address, for
// the fixtures) behind the REST front of emulators/pubsubrest (REST:
// host:port): the kind is tested over the wire it uses against the state
// pstest keeps.
type fakePubSub struct {
	Addr, REST string
}

func newFakePubSub(t *testing.T) *fakePubSub {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(pubsubrest.Handler(&srv.GServer))
	t.Cleanup(hs.Close)
	return &fakePubSub{Addr: srv.Addr, REST: strings.TrimPrefix(hs.URL, "http://")}
}
