package deploy

import "slices"

// The IAM table: what each function's code does with the deployed
// resources (Access) and the role that allows each operation (OpGrants).
// It is the one place both sides read:
//
//   - the code's side: shared/wiring's TestAccessCoversTheCode derives,
//     from each function package's source (the wiring.Deps members and
//     the clients it uses), the operations it certainly performs and
//     fails when Access lacks one;
//   - Terraform's side: terraform/iam_test.go collects every IAM binding
//     of a function's service account in terraform/ and fails unless it
//     is exactly Grants(function).
//
// To add a principal that is not a function (the runner's service
// account, say): name it in OtherPrincipals, add its operations to
// Access, its source evidence to a test like shared/wiring's, and its
// bindings to terraform/ and terraform/iam_test.go (bindings).

// Resource names a deployed resource, or a set of them, that roles are
// granted on.
type Resource string

// Resources of the deployment.
const (
	// ResProject is the project (project-level roles).
	ResProject Resource = "project"
	// ResEventsTopic and ResCommandsTopic are the Pub/Sub topics.
	ResEventsTopic   Resource = "topic:" + TopicEvents
	ResCommandsTopic Resource = "topic:" + TopicCommands
	// ResQueues are the Cloud Tasks queues (work and timers; a role is
	// granted on both).
	ResQueues Resource = "queues"
	// ResTasksAccount is the service account whose OIDC token Cloud Tasks
	// attaches to execute's calls (creating a task with it needs actAs).
	ResTasksAccount Resource = "serviceAccount:" + TasksServiceAccount
	// ResPushAccount is the service account whose OIDC token Pub/Sub
	// attaches to push deliveries (setting a push config with it needs
	// actAs).
	ResPushAccount Resource = "serviceAccount:" + PushServiceAccount
	// ResResultsBucket is the results tier's bucket.
	ResResultsBucket Resource = "bucket:" + ResultsBucket
	// ResSigningKey is the signing key's secret.
	ResSigningKey Resource = "secret:" + SigningKeySecret
	// ResCredentials are the keychain credentials' secrets
	// (SecretPrefix<name>).
	ResCredentials Resource = "secret:" + SecretPrefix + "*"
	// ResAPIToken is the optional secret of the api's static token.
	ResAPIToken Resource = "secret:api-token"
	// ResRegisteredSubscriptions are the Pub/Sub subscriptions registered
	// kind: Subscription resources consume (Terraform var.subscriptions).
	ResRegisteredSubscriptions Resource = "subscriptions:registered"
	// ResSpoolBuckets are the spool buckets of registered subscriptions.
	ResSpoolBuckets Resource = "buckets:spool"
	// ResReplaySubscription is the events topic's replay subscription
	// (retain_acked_messages, consumed by nothing else) that the api seeks
	// to rebuild an execution's event read model.
	ResReplaySubscription Resource = "subscription:" + ReplaySubscription
	// ResRunner is the runner's Cloud Run service (noetl-runner): the data
	// plane that runs authors' code for execute.
	ResRunner Resource = "run:noetl-runner"
	// ResExecuteAccount is execute's own service account: it signs the
	// runner's result grants (V4 signed URLs) as itself.
	ResExecuteAccount Resource = "serviceAccount:noetl-execute"
)

// Op is an operation the code performs on a deployed resource.
type Op string

// Operations of the engine's code.
const (
	// OpFirestore reads and writes the (default) database (executions,
	// DLQ entries, catalog, credentials, subscriptions).
	OpFirestore Op = "firestore"
	// OpTelemetry writes logs, and metrics and traces over OTLP to the
	// Telemetry API (shared/telemetry, exporter gcp).
	OpTelemetry Op = "telemetry"
	// OpReadSigningKey reads the signing key (NOETL_SIGNING_KEY, a
	// secret environment variable).
	OpReadSigningKey Op = "signing-key:read"
	// OpPublishEvents publishes event batches (and operation counts) on
	// the events topic.
	OpPublishEvents Op = "events:publish"
	// OpPublishCommands publishes commands (bulk fan-out, DLQ replays of
	// dispatch's messages) on the commands topic.
	OpPublishCommands Op = "commands:publish"
	// OpCreateTasks creates Cloud Tasks on the queues with the OIDC
	// token of the tasks account.
	OpCreateTasks Op = "tasks:create"
	// OpDeleteTasks lists and deletes an execution's pending tasks
	// (cloudtasks.Dispatcher.TaskDeleteExecution: stop, cancel, deadline).
	OpDeleteTasks Op = "tasks:delete"
	// OpReadResults reads result objects (offloaded results, loop items,
	// large unit bodies).
	OpReadResults Op = "results:read"
	// OpWriteResults creates and overwrites result objects (offloaded
	// results, loop plans, the bodies of units over Cloud Tasks' 100 KB).
	OpWriteResults Op = "results:write"
	// OpReadCredentials reads keychain credentials' secrets.
	OpReadCredentials Op = "credentials:read"
	// OpAddCredentials manages the versions of keychain credentials'
	// secrets (the api's credentials set adds one, delete destroys them)
	OpAddCredentials Op = "credentials:add"
	// OpReadAPIToken reads the api's static bearer token.
	OpReadAPIToken Op = "api-token:read"
	// OpRewireSubscriptions reads registered subscriptions and sets their
	// push config (OIDC token of the push account).
	OpRewireSubscriptions Op = "subscriptions:rewire"
	// OpPullSubscriptions pulls, acknowledges and reads registered
	// subscriptions.
	OpPullSubscriptions Op = "subscriptions:pull"
	// OpSpool writes, lists, reads and deletes spool objects.
	OpSpool Op = "spool"
	// OpReplayEvents seeks, pulls and acknowledges the events topic's
	// replay subscription (shared/replay: `noetl rebuild`).
	OpReplayEvents Op = "events:replay"
	// OpInvokeRunner calls the runner's service with an ID token (one
	// request per task attempt of a runner kind).
	OpInvokeRunner Op = "runner:invoke"
	// OpSignGrants signs the runner's result grants (V4 signed URLs of
	// the result objects an attempt may read and write) as the
	// function's own account, through the IAM Credentials API's signBlob
	// (shared/runnerclient Granter).
	OpSignGrants Op = "grants:sign"
)

// Grant is a role on a resource.
type Grant struct {
	Resource Resource
	Role     string
}

// OpGrants are the grants that allow each operation (roles of the
// Google Cloud IAM reference of each service).
var OpGrants = map[Op][]Grant{
	OpFirestore:      {{ResProject, "roles/datastore.user"}},
	OpTelemetry:      {{ResProject, "roles/logging.logWriter"}, {ResProject, "roles/telemetry.metricsWriter"}, {ResProject, "roles/telemetry.tracesWriter"}},
	OpReadSigningKey: {{ResSigningKey, "roles/secretmanager.secretAccessor"}},
	OpPublishEvents:  {{ResEventsTopic, "roles/pubsub.publisher"}},
	OpPublishCommands: {
		{ResCommandsTopic, "roles/pubsub.publisher"},
	},
	// enqueuer: cloudtasks.tasks.create; a task with an OIDC token
	// needs iam.serviceAccounts.actAs on its account.
	OpCreateTasks: {{ResQueues, "roles/cloudtasks.enqueuer"}, {ResTasksAccount, "roles/iam.serviceAccountUser"}},
	// TaskDeleteExecution lists the queues (cloudtasks.tasks.list, in
	// viewer) and deletes (taskDeleter).
	OpDeleteTasks:     {{ResQueues, "roles/cloudtasks.taskDeleter"}, {ResQueues, "roles/cloudtasks.viewer"}},
	OpReadResults:     {{ResResultsBucket, "roles/storage.objectViewer"}},
	OpWriteResults:    {{ResResultsBucket, "roles/storage.objectAdmin"}}, // overwriting needs storage.objects.delete
	OpReadCredentials: {{ResCredentials, "roles/secretmanager.secretAccessor"}},
	OpAddCredentials:  {{ResCredentials, "roles/secretmanager.secretVersionManager"}},
	OpReadAPIToken:    {{ResAPIToken, "roles/secretmanager.secretAccessor"}},
	OpRewireSubscriptions: {
		{ResRegisteredSubscriptions, "roles/pubsub.editor"}, {ResPushAccount, "roles/iam.serviceAccountUser"},
	},
	OpPullSubscriptions: {{ResRegisteredSubscriptions, "roles/pubsub.subscriber"}, {ResRegisteredSubscriptions, "roles/pubsub.viewer"}},
	OpSpool:             {{ResSpoolBuckets, "roles/storage.objectAdmin"}},
	OpInvokeRunner:      {{ResRunner, "roles/run.invoker"}},
	OpSignGrants:        {{ResExecuteAccount, "roles/iam.serviceAccountTokenCreator"}},
	// subscriber: pubsub.subscriptions.consume (pull, acknowledge, seek
	// to a time) on the one subscription.
	OpReplayEvents: {{ResReplaySubscription, "roles/pubsub.subscriber"}},
}

// subsumes lists roles that include another role's permissions on the
// same resource: the smaller one is not granted beside the larger.
var subsumes = map[string][]string{
	"roles/storage.objectAdmin": {"roles/storage.objectViewer", "roles/storage.objectCreator"},
}

// Every function signs or verifies (signing key), logs and exports
// telemetry, files DLQ entries in Firestore, and flushes operation counts
// to the events topic (bus.RunFlusher, started by shared/wiring in every
// instance).
var common = []Op{OpFirestore, OpTelemetry, OpReadSigningKey, OpPublishEvents}

// OtherPrincipals are the runtime identities besides the functions'
// service accounts that the IAM table covers.
var OtherPrincipals = []string{}

// Principals are the runtime identities of the IAM table: every
// function (its service account noetl-<name>) and OtherPrincipals.
func Principals() []string {
	var out []string
	for _, f := range Functions {
		out = append(out, f.Name)
	}
	return append(out, OtherPrincipals...)
}

// Access is what each principal's code does: its operations besides the
// common ones every function performs.
var Access = map[string][]Op{
	// Starts and cancels executions, replays DLQ entries (units: tasks,
	// large ones through the results tier; messages: either topic),
	// describes executions (offloaded results, redaction of keychain
	// values), manages credentials,
	// wires registered subscriptions, deletes results by lifetime (the
	// results GC: OpWriteResults includes deletes) and rebuilds event
	// read models from the replay subscription.
	"api": {OpPublishCommands, OpCreateTasks, OpDeleteTasks, OpReadResults, OpWriteResults,
		OpReadCredentials, OpAddCredentials, OpReadAPIToken, OpRewireSubscriptions, OpReplayEvents},
	// Starts executions from external events.
	"emit": {OpReadAPIToken},
	// Runs units: transitions (next units, bulk fan-out, timers),
	// results, execution deadlines (stop), keychains; hands the runner
	// kinds' attempts to the runner with the result grants it signs.
	"execute": {OpPublishCommands, OpCreateTasks, OpDeleteTasks, OpReadResults, OpWriteResults, OpReadCredentials, OpInvokeRunner, OpSignGrants},
	// Applies transitions: next units, bulk fan-out, loop plans and
	// loop.done results, control-plane templates' keychains.
	"route": {OpPublishCommands, OpCreateTasks, OpReadResults, OpWriteResults, OpReadCredentials},
	// Projects event batches into Firestore.
	"materialize": {},
	// Creates the tasks of bulk fan-out commands (large bodies through
	// the results tier).
	"dispatch": {OpCreateTasks, OpWriteResults},
	// Pulls registered subscriptions, spools, starts executions (their
	// playbooks' keychains).
	"subscribe": {OpPullSubscriptions, OpSpool, OpReadCredentials},
}

// Ops returns every operation of principal p (the common ones and
// Access[p]), sorted; nil when p is unknown.
func Ops(p string) []Op {
	ops, ok := Access[p]
	if !ok {
		return nil
	}
	out := append(slices.Clone(common), ops...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Grants returns the grants principal p needs: the OpGrants of its Ops,
// without a role another one on the same resource includes, sorted by
// resource and role.
func Grants(p string) []Grant {
	var out []Grant
	for _, op := range Ops(p) {
		out = append(out, OpGrants[op]...)
	}
	has := func(g Grant) bool { return slices.Contains(out, g) }
	var kept []Grant
	for _, g := range out {
		covered := false
		for big, small := range subsumes {
			if slices.Contains(small, g.Role) && has(Grant{g.Resource, big}) {
				covered = true
			}
		}
		if !covered {
			kept = append(kept, g)
		}
	}
	slices.SortFunc(kept, func(a, b Grant) int {
		if a.Resource != b.Resource {
			if a.Resource < b.Resource {
				return -1
			}
			return 1
		}
		if a.Role < b.Role {
			return -1
		}
		if a.Role > b.Role {
			return 1
		}
		return 0
	})
	return slices.Compact(kept)
}
