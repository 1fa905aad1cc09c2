package planes

import (
	"slices"
	"strings"
	"testing"
)

// contracts are the packages that declare an interface beside its drivers
// (in the manner of go-cloud's blob beside gcsblob and river's riverdriver
// beside riverpgxv5): each holds the interface, its types, errors and
// conformance suite's subject, and links no cloud client; its drivers are
// packages of their own below it.
var contracts = []string{
	module + "/shared/bus",         // drivers: bus/pubsubbus; fake: control/controltest.Publisher
	module + "/shared/bus/bustest", // the suite
	module + "/shared/tasks",       // drivers: tasks/cloudtasks; fake: control/controltest.Tasks
	module + "/shared/tasks/taskstest",
	module + "/shared/results", // drivers: results/gcsresults, results.NewMemory (in the contract: it links nothing)
	module + "/shared/results/resultstest",
}

// subscribeContracts are the subscribe service and its suite: the spool's
// Bucket and batch dispatch's Puller have their drivers in
// subscribe/gcsspool and subscribe/pubsubpull (and the Kafka puller, on
// franz-go, in the package). They link none of contractClients but the
// Pub/Sub API's message types (pubsubpb, no client): SubscriptionAdmin is
// the admin API's own signature, which the Registrar calls, and its driver
// is the admin client itself.
var subscribeContracts = []string{
	module + "/shared/subscribe",
	module + "/shared/subscribe/subscribetest",
}

// pubsubTypes is the Pub/Sub API's message package, allowed in subscribe.
const pubsubTypes = "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

// contractClients are the cloud clients a contract must not link: the
// drivers' clients (Cloud Storage, Pub/Sub, Cloud Tasks) and the other
// stores' (Firestore, Secret Manager).
var contractClients = []string{
	"cloud.google.com/go/storage",
	"cloud.google.com/go/pubsub",
	"cloud.google.com/go/cloudtasks",
	"cloud.google.com/go/firestore",
	"cloud.google.com/go/secretmanager",
}

// TestContractsLinkNoClient: every contract package builds without the
// cloud client of its drivers (go list -deps of the package alone, as a
// program importing only the contract would link it). On failure it prints
// the import chain that brings the client in.
func TestContractsLinkNoClient(t *testing.T) {
	g := loadGraph(t, contracts...)
	var rs []rule
	for _, c := range contracts {
		rs = append(rs, rule{c, "the contract " + short(c) + " links no cloud client", contractClients})
	}
	for _, p := range check(g, rs, nil) {
		t.Error(p)
	}
}

// TestSubscribeLinksNoDriverClient: the subscribe service and its suite
// link no cloud client of contractClients (the Pub/Sub API's message
// types aside, see subscribeContracts).
func TestSubscribeLinksNoDriverClient(t *testing.T) {
	g := loadGraph(t, subscribeContracts...)
	if len(reach(g, subscribeContracts[0], pubsubTypes, nil)) == 0 {
		t.Errorf("%s no longer links %s: drop the allowance", short(subscribeContracts[0]), pubsubTypes)
	}
	for _, c := range subscribeContracts {
		for _, client := range contractClients {
			if found := reach(g, c, client, []string{pubsubTypes}); len(found) > 0 {
				t.Errorf("%s links %s, e.g.\n\t%s", short(c), client, chainString(found[0]))
			}
		}
	}
}

// TestContractDriversLinkTheirClient proves the check reads the real graph:
// each driver package does link its client, through an import of its own
// (the chain's second package is a client's), so a contract that took its
// driver's code back would fail TestContractsLinkNoClient.
func TestContractDriversLinkTheirClient(t *testing.T) {
	drivers := map[string]string{
		module + "/shared/bus/pubsubbus":        "cloud.google.com/go/pubsub",
		module + "/shared/tasks/cloudtasks":     "cloud.google.com/go/cloudtasks",
		module + "/shared/results/gcsresults":   "cloud.google.com/go/storage",
		module + "/shared/subscribe/gcsspool":   "cloud.google.com/go/storage",
		module + "/shared/subscribe/pubsubpull": "cloud.google.com/go/pubsub",
	}
	var roots []string
	for d := range drivers {
		roots = append(roots, d)
	}
	slices.Sort(roots)
	g := loadGraph(t, roots...)
	for _, d := range roots {
		found := reach(g, d, drivers[d], nil)
		if len(found) == 0 {
			t.Errorf("%s does not link %s: the contract check would pass vacuously", short(d), drivers[d])
			continue
		}
		if !strings.HasPrefix(found[0][1], drivers[d]) {
			t.Errorf("%s links %s only through %s, not directly", short(d), drivers[d], chainString(found[0]))
		}
	}
}
