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

locals {
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"

  # Project-level roles: Firestore (every function reads or writes
  # executions/... or files DLQ entries) and telemetry (logs, metrics,
  # traces).
  project_roles = ["roles/datastore.user", "roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/cloudtrace.agent"]

  # Topics each function publishes on.
  publishes = {
    api         = ["events"]             # execution start and cancel (route="1")
    emit        = ["events"]             # external events
    execute     = ["events", "commands"] # event batches; bulk fan-out
    route       = ["events", "commands"] # transitions; bulk fan-out
    materialize = []
    dispatch    = []
    subscribe   = ["events"] # execution starts of subscription messages
  }

  # Cloud Tasks roles per function on both queues: create units, delete
  # pending ones (cancellation).
  queue_roles = {
    api      = ["roles/cloudtasks.enqueuer", "roles/cloudtasks.taskDeleter"] # DLQ replay, cancel
    execute  = ["roles/cloudtasks.enqueuer"]                                 # next units, timers
    route    = ["roles/cloudtasks.enqueuer", "roles/cloudtasks.taskDeleter"] # transitions, cancel
    dispatch = ["roles/cloudtasks.enqueuer"]                                 # bulk fan-out
  }

  # Results bucket access.
  bucket_roles = {
    api     = "roles/storage.objectViewer" # describe shows offloaded results
    execute = "roles/storage.objectAdmin"  # task results, loop items
    route   = "roles/storage.objectAdmin"  # loop plans, loop.done results
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
