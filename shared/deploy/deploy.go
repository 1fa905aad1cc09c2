// Package deploy is the manifest of the engine's deployed resources: the
// functions and their entry points, the Pub/Sub topics and subscriptions,
// the Cloud Tasks queues, the results bucket, the Firestore collections
// (with their TTL fields, index exemptions and composite indexes) and the
// keychain secrets. It is the single source of these names: the code uses
// them, and terraform/terraform_test.go checks, in both directions, that
// the Terraform in terraform/ declares exactly these resources with these
// names (control loop v2 design: topics events/commands, push
// subscriptions route/materialize/dispatch, queues work/timers).
//
// The manifest holds names only; environment variables are declared by
// the configuration registry (shared/config).
package deploy

// Trigger is how a function is invoked.
type Trigger string

const (
	// TriggerHTTP is a plain HTTP function (authenticated callers, or
	// Cloud Tasks with an OIDC token for execute).
	TriggerHTTP Trigger = "http"
	// TriggerPush is a CloudEvent function fed by a Pub/Sub push
	// subscription: the push body ({"message": {...}, "subscription": ...})
	// is converted to a google.cloud.pubsub.topic.v1.messagePublished
	// CloudEvent by functions-framework-go.
	TriggerPush Trigger = "push"
)

// Function is one Cloud Function (gen2) of the engine.
type Function struct {
	// Name is the functions-framework registration name, which is also the
	// Cloud Functions entry point and the key of the function in
	// Terraform (deployed as "noetl-<Name>").
	Name string
	// Package is the Go import path of the package that registers Name.
	Package string
	// Trigger is how the function is invoked.
	Trigger Trigger
	// Subscription is the push subscription that delivers to the function
	// (TriggerPush only).
	Subscription string
	// Invokers says who may invoke the function: "users" (principals
	// granted by the deployment), "tasks" (the Cloud Tasks OIDC service
	// account) or "push" (the Pub/Sub push service account).
	Invokers string
}

// Module is the Go module path; the buildpack imports the root package.
const Module = "github.com/noetl/gcpengine"

// Functions are the engine's functions (README "Architecture" "Functions", plus
// subscribe for README "Running NoETL v2 playbooks"'s subscriptions).
var Functions = []Function{
	{Name: "api", Package: Module + "/functions/api", Trigger: TriggerHTTP, Invokers: "users"},
	{Name: "emit", Package: Module + "/functions/emit", Trigger: TriggerHTTP, Invokers: "users"},
	{Name: "execute", Package: Module + "/functions/execute", Trigger: TriggerHTTP, Invokers: "tasks"},
	{Name: "route", Package: Module + "/functions/route", Trigger: TriggerPush, Subscription: "route", Invokers: "push"},
	{Name: "materialize", Package: Module + "/functions/materialize", Trigger: TriggerPush, Subscription: "materialize", Invokers: "push"},
	{Name: "dispatch", Package: Module + "/functions/dispatch", Trigger: TriggerPush, Subscription: "dispatch", Invokers: "push"},
	// subscribe is an HTTP function: the push subscriptions of registered
	// kind: Subscription resources are created at run time (POST
	// /subscriptions sets their push config to <url>/push/<name>), and
	// Cloud Scheduler calls /tick; both authenticate as the push account.
	{Name: "subscribe", Package: Module + "/functions/subscribe", Trigger: TriggerHTTP, Invokers: "push"},
}

// Topic names (README "Architecture" "Pub/Sub").
const (
	// TopicEvents carries the event log: one message per batch of events.
	TopicEvents = "events"
	// TopicCommands carries bulk fan-out (more than 8 commands) to dispatch.
	TopicCommands = "commands"
	// TopicEventsDead receives messages of the events subscriptions whose
	// deliveries were exhausted.
	TopicEventsDead = "events-dead"
	// TopicCommandsDead receives exhausted messages of the dispatch
	// subscription.
	TopicCommandsDead = "commands-dead"
)

// ReplaySubscription is the events topic's replay subscription: a pull
// subscription that keeps acknowledged messages and that nothing but
// `noetl rebuild` reads (NOETL_REPLAY_SUBSCRIPTION; terraform/pubsub.tf).
const ReplaySubscription = "events-replay"

// Topics lists every topic.
var Topics = []string{TopicEvents, TopicCommands, TopicEventsDead, TopicCommandsDead}

// Message attribute names (README "Architecture" "Message attributes").
const (
	AttrExecutionID = "execution_id"
	AttrBatchID     = "batch_id"
	// AttrRoute is "1" on messages route must see (execution start,
	// cancel, external/late boundary events); absent otherwise.
	AttrRoute       = "route"
	AttrTraceParent = "traceparent"
	AttrTraceState  = "tracestate"
)

// RouteFilter is the Pub/Sub filter of the route subscription.
const RouteFilter = `attributes.route = "1"`

// Subscription is one Pub/Sub subscription.
type Subscription struct {
	Name  string
	Topic string
	// Filter is the Pub/Sub filter expression ("" = every message).
	Filter string
	// Push names the function the subscription pushes to ("" = a pull
	// subscription, used to inspect a dead-letter topic).
	Push string
	// DeadLetterTopic receives messages whose deliveries were exhausted
	// ("" for pull subscriptions).
	DeadLetterTopic string
}

// Subscriptions lists every subscription. None uses message ordering: the
// code is correct under any order (README "Architecture").
var Subscriptions = []Subscription{
	{Name: "route", Topic: TopicEvents, Filter: RouteFilter, Push: "route", DeadLetterTopic: TopicEventsDead},
	{Name: "materialize", Topic: TopicEvents, Push: "materialize", DeadLetterTopic: TopicEventsDead},
	{Name: "dispatch", Topic: TopicCommands, Push: "dispatch", DeadLetterTopic: TopicCommandsDead},
	{Name: "events-dead-inspect", Topic: TopicEventsDead},
	{Name: "commands-dead-inspect", Topic: TopicCommandsDead},
}

// Cloud Tasks queue names (README "Architecture" "Cloud Tasks queues"). Both target
// the execute function with an OIDC token of the tasks service account.
const (
	// QueueWork delivers units of work as soon as possible.
	QueueWork = "work"
	// QueueTimers delivers delayed tasks: retries, lease reclaim checks,
	// step/loop/execution timeouts.
	QueueTimers = "timers"
)

// Queues lists every queue.
var Queues = []string{QueueWork, QueueTimers}

// TasksServiceAccount is the account id of the service account whose OIDC
// token Cloud Tasks attaches to calls of execute (README "Architecture").
const TasksServiceAccount = "noetl-tasks"

// PushServiceAccount is the account id of the service account whose OIDC
// token Pub/Sub attaches to push deliveries.
const PushServiceAccount = "noetl-push"

// ResultsBucket is the Terraform name of the GCS bucket of the results
// tier (NoETL result storage RFC): results/..., loop items, offloaded loop.done results.
// Its real name is project-specific and reaches the code through
// NOETL_RESULTS_BUCKET.
const ResultsBucket = "results"

// SecretPrefix prefixes the Secret Manager secret of each keychain
// credential: secret "noetl-cred-<name>" holds credential <name>.
const SecretPrefix = "noetl-cred-"

// SigningKeySecret is the Secret Manager secret holding the deployment's
// signing key (NOETL_SIGNING_KEY, shared/sign): every function reads it.
const SigningKeySecret = "noetl-signing-key"

// TTLField is the timestamp field Firestore TTL policies expire documents
// on. Firestore TTL deletes a document, never its subcollections, so every
// collection of an execution carries its own expire_at.
const TTLField = "expire_at"

// Collection is one Firestore collection (group).
type Collection struct {
	// Group is the collection id (what Firestore TTL policies, index
	// exemptions and collection-group queries name).
	Group string
	// Path is the document path pattern, for documentation.
	Path string
	// TTLField is the field a TTL policy expires documents on ("" = no
	// TTL: the documents live until deleted).
	TTLField string
	// LargeFields are fields holding large JSON/YAML strings that are
	// never queried: exempted from single-field indexing (index writes
	// cost and the 1500-byte index entry limit).
	LargeFields []string
}

// Collections lists every collection the code writes (README "Architecture"
// "Firestore collections").
var Collections = []Collection{
	{Group: "executions", Path: "executions/{id}", TTLField: TTLField, LargeFields: []string{"state", "source"}},
	{Group: "batches", Path: "executions/{id}/batches/{batch_id}", TTLField: TTLField, LargeFields: []string{"data"}},
	{Group: "outbox", Path: "executions/{id}/outbox/{event_id}", TTLField: TTLField, LargeFields: []string{"data"}},
	{Group: "loops", Path: "executions/{id}/loops/{step.run}", TTLField: TTLField, LargeFields: []string{"data"}},
	{Group: "iterations", Path: "executions/{id}/loops/{step.run}/iterations/{index}", TTLField: TTLField, LargeFields: []string{"data"}},
	{Group: "iteration_groups", Path: "executions/{id}/loops/{step.run}/iteration_groups/{first}-{last}", TTLField: TTLField, LargeFields: []string{"records"}},
	{Group: "lanes", Path: "executions/{id}/loops/{step.run}/lanes/{lane}", TTLField: TTLField},
	{Group: "loop_done", Path: "executions/{id}/loop_done/{step.run}", TTLField: TTLField},
	{Group: "units", Path: "executions/{id}/units/{unit}", TTLField: TTLField},
	{Group: "attempts", Path: "executions/{id}/units/{unit}/attempts/{key}", TTLField: TTLField, LargeFields: []string{"data"}},
	{Group: "dlq", Path: "dlq/{id}", TTLField: TTLField, LargeFields: []string{"payload", "context_excerpt"}},
	{Group: "playbooks", Path: "playbooks/{path}"},
	{Group: "versions", Path: "playbooks/{path}/versions/{v}", LargeFields: []string{"source"}},
	// Credential metadata and grants; the values are in Secret Manager
	// (GCP) or sealed in credential_values (NOETL_CREDENTIAL_VALUES=
	// firestore: the local stack; never written in GCP).
	{Group: "credentials", Path: "credentials/{name}"},
	{Group: "credential_values", Path: "credential_values/{name}.{version}"},
	{Group: "subscriptions", Path: "subscriptions/{name}", LargeFields: []string{"source"}},
}

// IndexField is one field of a composite index.
type IndexField struct {
	Path string
	// Order is "ASCENDING" or "DESCENDING".
	Order string
}

// Index is a composite Firestore index (query scope COLLECTION).
type Index struct {
	Collection string
	Fields     []IndexField
}

// Indexes are the composite indexes of the listings: executions by status,
// playbook, parent or creator, newest first (GET /executions), and DLQ entries by
// status, most recent first (dlq list --status).
var Indexes = []Index{
	{Collection: "executions", Fields: []IndexField{{"parent_id", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"status", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"playbook", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"playbook", "ASCENDING"}, {"status", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	// A caller below the operator role lists its own executions only
	// (README "Security"): the same listings under creator ==.
	{Collection: "executions", Fields: []IndexField{{"creator", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"creator", "ASCENDING"}, {"status", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"creator", "ASCENDING"}, {"playbook", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "executions", Fields: []IndexField{{"creator", "ASCENDING"}, {"playbook", "ASCENDING"}, {"status", "ASCENDING"}, {"created_at", "DESCENDING"}}},
	{Collection: "dlq", Fields: []IndexField{{"status", "ASCENDING"}, {"last_seen", "DESCENDING"}}},
}

// FunctionByName returns the function named name.
func FunctionByName(name string) (Function, bool) {
	for _, f := range Functions {
		if f.Name == name {
			return f, true
		}
	}
	return Function{}, false
}

// CollectionByGroup returns the collection with id group.
func CollectionByGroup(group string) (Collection, bool) {
	for _, c := range Collections {
		if c.Group == group {
			return c, true
		}
	}
	return Collection{}, false
}
