package planes

import "testing"

// Roots of the store's contract and its drivers (contracts apart from
// drivers: go-cloud's blob/driver beside gcsblob, River's riverdriver
// beside riverpgxv5).
const (
	rootStore          = module + "/shared/store"
	rootMemStore       = module + "/shared/store/memstore"
	rootFirestoreStore = module + "/shared/store/firestorestore"
)

// firestoreClient is the Firestore client library (and its generated API).
var firestoreClient = []string{"cloud.google.com/go", "google.golang.org/genproto/googleapis/firestore"}

var storeRules = []rule{
	{rootStore, "the store's contract links no cloud client and none of its drivers", append([]string{
		rootFirestoreStore, rootMemStore,
	}, firestoreClient...)},
	{rootMemStore, "the in-memory store driver links no cloud client", append([]string{rootFirestoreStore}, firestoreClient...)},
}

// TestStoreContractLinksNoClient: `go list -deps ./shared/store` (the
// contract every control-plane package imports) holds no
// cloud.google.com/go package and no driver; the in-memory driver none
// either. The Firestore driver is read too, as positive evidence that
// the rule's pattern names the client a driver really links.
func TestStoreContractLinksNoClient(t *testing.T) {
	g := loadGraph(t, rootStore, rootMemStore, rootFirestoreStore)
	for _, p := range check(g, storeRules, nil) {
		t.Error(p)
	}
	if len(reach(g, rootFirestoreStore, "cloud.google.com/go/firestore", nil)) == 0 {
		t.Error("the Firestore driver does not link cloud.google.com/go/firestore: the rule's pattern no longer names the client")
	}
}
