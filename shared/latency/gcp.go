package latency

import "time"

// This file is the one place the GCP latency profile's figures live: each
// operation's median and 99th percentile, where the figure comes from,
// and when it was read. A figure Google publishes is marked "published";
// where no public figure gives a number, the value is our estimate,
// marked "estimate", with the published text it is bounded by. Every
// figure is for a single-region deployment with warm instances (no cold
// starts: a cold start is seconds, not a tail of these).
//
// Sources (read 2026-11-28):
//
//   - [GCS classes] Google Cloud, "Storage classes" (Cloud Storage
//     documentation): every class has "low latency (time to first byte
//     typically tens of milliseconds)".
//   - [Spanner OSDI] Corbett et al., "Spanner: Google's Globally-
//     Distributed Database", OSDI 2012, tables 3 and 6: a read of the
//     F1 deployment took 8.7 ms on average, a single-site commit
//     72.3 ms on average (5 replicas spread over the US), a
//     microbenchmark write 14.4 ms with one replica.
//   - [Firestore ICDE] Kesavan et al., "Firestore: The NoSQL Serverless
//     Database for the Application Developer", ICDE 2023: Firestore
//     stores its data in Spanner (a regional database: replicas in the
//     zones of one region, closer than the Spanner paper's US-wide
//     deployment).
//   - [Pub/Sub troubleshooting] Google Cloud, "Troubleshoot a standard
//     topic" (Pub/Sub documentation): publish latency (the publish
//     request) is distinct from end-to-end delivery latency (published →
//     delivered to the subscriber), and a topic of low throughput takes
//     longer to deliver.
//   - [Cloud Tasks pitfalls] Google Cloud, "Issues and limitations"
//     (Cloud Tasks documentation): tasks not scheduled in the future are
//     dispatched as soon as the queue's rate allows; no latency figure is
//     given.
//   - [Cloud Run] Google Cloud, Cloud Run documentation: requests reach
//     an instance through the Google Front End and Cloud Run's routing;
//     no per-request overhead figure is given.

// GCP is the latency profile of a single-region Google Cloud deployment
// (NOETL_LATENCY_PROFILE=gcp). Medians and 99th percentiles in the table
// of docs/benchmarks.md ("The gcp latency profile") are these.
var GCP = Profile{
	Name: "gcp",
	Ops: map[Op]Figure{
		// Estimate bounded by [Spanner OSDI] (8.7 ms mean reads, a
		// US-wide deployment of 2012) and [Firestore ICDE] (Firestore is
		// regional Spanner): a strongly consistent document read.
		FirestoreRead: {Dist: Dist{Median: 8 * time.Millisecond, P99: 60 * time.Millisecond}, Kind: Estimate,
			Source: "Spanner OSDI 2012 table 6 (reads 8.7 ms mean); Firestore ICDE 2023 (Firestore on Spanner)"},
		// Estimate bounded by [Spanner OSDI]: 14.4 ms for a one-replica
		// write, 72.3 ms mean for a US-wide 5-replica commit; a regional
		// commit (replicas in one region) lies between them.
		FirestoreCommit: {Dist: Dist{Median: 25 * time.Millisecond, P99: 120 * time.Millisecond}, Kind: Estimate,
			Source: "Spanner OSDI 2012 tables 3 and 6 (14.4 ms one-replica write, 72.3 ms US-wide commit); Firestore ICDE 2023"},
		// Estimate: [Pub/Sub troubleshooting] names end-to-end delivery
		// latency and says low-throughput topics are slower, without a
		// figure. Publish ack plus a push request.
		PubSubPush: {Dist: Dist{Median: 50 * time.Millisecond, P99: 400 * time.Millisecond}, Kind: Estimate,
			Source: "Pub/Sub documentation, \"Troubleshoot a standard topic\" (publish vs end-to-end latency; no figure)"},
		// Estimate: the create RPC (a durable write, like a Firestore
		// commit) then the queue's dispatch of a task due now
		// ([Cloud Tasks pitfalls], no figure).
		TasksDispatch: {Dist: Dist{Median: 40 * time.Millisecond, P99: 300 * time.Millisecond}, Kind: Estimate,
			Source: "Cloud Tasks documentation, \"Issues and limitations\" (dispatch as the queue's rate allows; no figure)"},
		// Estimate: a Cloud Tasks RPC alone (create of a delayed task,
		// delete): a durable write, as FirestoreCommit.
		TasksRPC: {Dist: Dist{Median: 20 * time.Millisecond, P99: 120 * time.Millisecond}, Kind: Estimate,
			Source: "as a Firestore commit (a durable regional write); no published figure"},
		// Published median ("typically tens of milliseconds" to first
		// byte, [GCS classes]); the p99 is our estimate.
		GCSRead: {Dist: Dist{Median: 30 * time.Millisecond, P99: 200 * time.Millisecond}, Kind: Published,
			Source: "Cloud Storage documentation, \"Storage classes\": time to first byte typically tens of milliseconds (median); p99 estimated"},
		// Estimate: a small object's upload is one request that returns
		// once the object is durable; taken as a read's first byte plus
		// a regional commit.
		GCSWrite: {Dist: Dist{Median: 50 * time.Millisecond, P99: 300 * time.Millisecond}, Kind: Estimate,
			Source: "Cloud Storage \"Storage classes\" (tens of ms to first byte) plus a regional commit; no published write figure"},
		// Estimate: a warm Cloud Run instance behind the Google Front End
		// ([Cloud Run], no figure): TLS is pooled, the overhead is routing.
		CloudRunRequest: {Dist: Dist{Median: 5 * time.Millisecond, P99: 50 * time.Millisecond}, Kind: Estimate,
			Source: "Cloud Run documentation (requests through the Google Front End; no per-request figure)"},
	},
}
