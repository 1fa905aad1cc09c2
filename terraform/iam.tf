# Service accounts: one per function (least privilege), the account whose
# OIDC token Cloud Tasks attaches to calls of execute (noetl-tasks), and
# the account whose OIDC token Pub/Sub attaches to push deliveries
# (noetl-push).

resource "google_service_account" "fn" {
  for_each     = local.functions
  account_id   = "noetl-${each.key}"
  display_name = "NoETL ${each.key} function"
  depends_on   = [google_project_service.services]
}

resource "google_service_account" "tasks" {
  account_id   = "noetl-tasks"
  display_name = "NoETL Cloud Tasks OIDC invoker of execute"
  depends_on   = [google_project_service.services]
}

resource "google_service_account" "push" {
  account_id   = "noetl-push"
  display_name = "NoETL Pub/Sub push OIDC invoker of route, materialize, dispatch"
  depends_on   = [google_project_service.services]
}

# The bindings below grant each function exactly what shared/deploy's
# IAM table (deploy.Access, deploy.OpGrants) says its code does:
# terraform/iam_test.go compares them, and shared/wiring's
# TestAccessCoversTheCode checks the table against the functions' code.
locals {
  # The Pub/Sub service agent (dead-letter forwarding, push OIDC tokens).
  # It exists once the Pub/Sub API is enabled and its identity created
  # (README bootstrap: gcloud beta services identity create
  # --service=pubsub.googleapis.com, which prints this address).
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"

  # Project-level roles of every function: Firestore (state, DLQ
  # entries) and telemetry (logs; metrics and traces over OTLP to the
  # Telemetry API).
  project_roles = ["roles/datastore.user", "roles/logging.logWriter", "roles/telemetry.metricsWriter", "roles/telemetry.tracesWriter"]

  # Topics each function publishes on. Every function's runtime flushes
  # operation counts to events (bus.RunFlusher).
  publishes = {
    api         = ["events", "commands"] # execution start and cancel; DLQ replays of either topic
    emit        = ["events"]             # external events
    execute     = ["events", "commands"] # event batches; bulk fan-out
    route       = ["events", "commands"] # transitions; bulk fan-out
    materialize = ["events"]             # operation counts
    dispatch    = ["events"]             # operation counts
    subscribe   = ["events"]             # execution starts of subscription messages
  }

  # Cloud Tasks roles per function on both queues: create units; list and
  # delete an execution's pending ones (stop: cancel, deadline).
  queue_roles = {
    api      = ["roles/cloudtasks.enqueuer", "roles/cloudtasks.taskDeleter", "roles/cloudtasks.viewer"] # DLQ replay, cancel
    execute  = ["roles/cloudtasks.enqueuer", "roles/cloudtasks.taskDeleter", "roles/cloudtasks.viewer"] # next units, timers, deadlines
    route    = ["roles/cloudtasks.enqueuer"]                                                            # transitions
    dispatch = ["roles/cloudtasks.enqueuer"]                                                            # bulk fan-out
  }

  # Results bucket access. Every function that creates tasks writes the
  # bodies of units over Cloud Tasks' 100 KB here first (and overwrites
  # them on a redelivery: objectAdmin).
  bucket_roles = {
    api      = "roles/storage.objectAdmin" # describe; DLQ replays of large units
    execute  = "roles/storage.objectAdmin" # task results, loop items
    route    = "roles/storage.objectAdmin" # loop plans, loop.done results
    dispatch = "roles/storage.objectAdmin" # bodies of large units
  }

  # Keychain secrets (credential values; metadata and grants are in
  # Firestore): read by the functions that resolve keychains — execute
  # (tasks), route (control-plane templates), api and subscribe (the
  # keychain is resolved, and its grants checked, when an execution
  # starts); the api adds and destroys versions (POST/DELETE
  # /credentials). emit, materialize and dispatch read no value.
  secret_roles = {
    execute   = ["roles/secretmanager.secretAccessor"]
    route     = ["roles/secretmanager.secretAccessor"]
    subscribe = ["roles/secretmanager.secretAccessor"]
    api       = ["roles/secretmanager.secretAccessor", "roles/secretmanager.secretVersionManager"]
  }

  project_bindings = { for p in setproduct(keys(local.functions), local.project_roles) : "${p[0]}/${p[1]}" => { fn = p[0], role = p[1] } }
  topic_bindings   = merge([for fn, topics in local.publishes : { for t in topics : "${fn}/${t}" => { fn = fn, topic = t } }]...)
  queue_bindings = merge([for fn, roles in local.queue_roles : {
    for p in setproduct(local.queues, roles) : "${fn}/${p[0]}/${p[1]}" => { fn = fn, queue = p[0], role = p[1] }
  }]...)
  secret_bindings = merge([for fn, roles in local.secret_roles : { for p in setproduct(var.credentials, roles) : "${fn}/${p[0]}/${p[1]}" => { fn = fn, credential = p[0], role = p[1] } }]...)
}

resource "google_project_iam_member" "fn" {
  for_each = local.project_bindings
  project  = var.project
  role     = each.value.role
  member   = google_service_account.fn[each.value.fn].member
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.topic_bindings
  topic    = google_pubsub_topic.topic[each.value.topic].id
  role     = "roles/pubsub.publisher"
  member   = google_service_account.fn[each.value.fn].member
}

resource "google_cloud_tasks_queue_iam_member" "fn" {
  for_each = local.queue_bindings
  location = var.region
  name     = google_cloud_tasks_queue.queue[each.value.queue].name
  role     = each.value.role
  member   = google_service_account.fn[each.value.fn].member
}

# Functions that create tasks act as noetl-tasks (the task's OIDC token).
resource "google_service_account_iam_member" "tasks_user" {
  for_each           = local.queue_roles
  service_account_id = google_service_account.tasks.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.fn[each.key].member
}

resource "google_storage_bucket_iam_member" "results" {
  for_each = local.bucket_roles
  bucket   = google_storage_bucket.results.name
  role     = each.value
  member   = google_service_account.fn[each.key].member
}

resource "google_secret_manager_secret_iam_member" "credential" {
  for_each  = local.secret_bindings
  secret_id = google_secret_manager_secret.credential[each.value.credential].secret_id
  role      = each.value.role
  member    = google_service_account.fn[each.value.fn].member
}

# Pub/Sub mints the push OIDC tokens as noetl-push, and moves exhausted
# messages to the dead-letter topics (publisher there, subscriber on the
# source subscriptions).
resource "google_service_account_iam_member" "push_token_creator" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_agent
  depends_on         = [google_project_service.services]
}

# execute signs the runner's result grants (V4 signed URLs of the result
# objects one attempt may read and write) as itself, through the IAM
# Credentials API's signBlob: it needs the token creator role on its own
# account. The runner's account gets nothing: the signed URL is its only
# right to a result, for one object, one method, until the attempt ends
# (README "Stored results and the runner").
resource "google_service_account_iam_member" "execute_signs_grants" {
  service_account_id = google_service_account.fn["execute"].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = google_service_account.fn["execute"].member
}

# Operators (people) call the api and emit with identity tokens minted
# for their URL, which gcloud mints only for service accounts: they
# impersonate noetl-operator (README "Deploy to GCP").
resource "google_service_account" "operator" {
  account_id   = "noetl-operator"
  display_name = "NoETL operators' identity for the api and emit"
  depends_on   = [google_project_service.services]
}

resource "google_service_account_iam_member" "operator_token_creator" {
  for_each           = toset(var.operators)
  service_account_id = google_service_account.operator.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = each.value
}

resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  for_each = toset([for s in values(local.push_subscriptions) : s.dead_letter_topic])
  topic    = google_pubsub_topic.topic[each.value].id
  role     = "roles/pubsub.publisher"
  member   = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  for_each     = local.push_subscriptions
  subscription = google_pubsub_subscription.push[each.key].id
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

# Invokers. Gen2 functions are private: the api and emit accept the
# principals of var.api_invokers (identity tokens), execute only the
# Cloud Tasks account, the push functions only the push account.
locals {
  invoker_members = merge(
    { for p in setproduct(["api", "emit"], var.api_invokers) : "${p[0]}/${p[1]}" => { fn = p[0], member = p[1] } },
    { for fn in ["api", "emit"] : "${fn}/operator" => { fn = fn, member = google_service_account.operator.member } },
    { "execute/tasks" = { fn = "execute", member = google_service_account.tasks.member } },
    { for name, f in local.functions : "${name}/push" => { fn = name, member = google_service_account.push.member } if f.invokers == "push" },
  )
}

resource "google_cloud_run_v2_service_iam_member" "invoker" {
  for_each = local.invoker_members
  location = var.region
  name     = google_cloudfunctions2_function.fn[each.value.fn].service_config[0].service
  role     = "roles/run.invoker"
  member   = each.value.member
}

# The account Cloud Build uses to build the functions (instead of the
# project's default build account, whose roles depend on the project's
# age and organization policy).
resource "google_service_account" "build" {
  account_id   = "noetl-build"
  display_name = "NoETL function builds"
  depends_on   = [google_project_service.services]
}

resource "google_project_iam_member" "build" {
  for_each = toset(["roles/cloudbuild.builds.builder", "roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectViewer"])
  project  = var.project
  role     = each.value
  member   = google_service_account.build.member
}
