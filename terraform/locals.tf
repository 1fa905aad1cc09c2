# The engine's resource names. These lists mirror shared/deploy (the Go
# manifest the code takes its names from); terraform_test.go checks both
# directions, so change them together.
locals {
  functions = {
    api         = { trigger = "http", invokers = "users" }
    emit        = { trigger = "http", invokers = "users" }
    execute     = { trigger = "http", invokers = "tasks" }
    route       = { trigger = "push", invokers = "push", subscription = "route" }
    materialize = { trigger = "push", invokers = "push", subscription = "materialize" }
    dispatch    = { trigger = "push", invokers = "push", subscription = "dispatch" }
    # Endpoint of the push subscriptions of registered kind: Subscription
    # resources (set at run time by POST /subscriptions) and of the
    # Cloud Scheduler tick (subscriptions.tf).
    subscribe = { trigger = "http", invokers = "push" }
  }

  topics = ["events", "commands", "events-dead", "commands-dead"]

  # Push subscriptions: no message ordering anywhere (the code is correct
  # under any order); dead letters go to <topic>-dead.
  push_subscriptions = {
    route       = { topic = "events", filter = "attributes.route = \"1\"", function = "route", dead_letter_topic = "events-dead" }
    materialize = { topic = "events", filter = "", function = "materialize", dead_letter_topic = "events-dead" }
    dispatch    = { topic = "commands", filter = "", function = "dispatch", dead_letter_topic = "commands-dead" }
  }

  # Pull subscriptions to inspect the dead-letter topics
  # (gcloud pubsub subscriptions pull events-dead-inspect).
  inspect_subscriptions = {
    "events-dead-inspect"   = "events-dead"
    "commands-dead-inspect" = "commands-dead"
  }

  queues = ["work", "timers"]

  # Firestore collection groups whose documents carry expire_at (TTL).
  # Firestore TTL never deletes subcollections, so each one has its own.
  ttl_collections = ["executions", "batches", "outbox", "loops", "iterations", "iteration_groups", "lanes", "loop_done", "units", "attempts", "dlq"]

  # Large JSON/YAML fields that are never queried: no single-field indexes.
  exempt_fields = {
    executions = ["state", "source"]
    batches    = ["data"]
    outbox     = ["data"]
    loops      = ["data"]
    iterations = ["data"]
    # A batch's ended records, one map entry per iteration (shared/control
    # batch.go): never queried; "indexes" is (array-contains).
    iteration_groups = ["records"]
    attempts         = ["data"]
    dlq              = ["payload", "context_excerpt"]
    versions         = ["source"]
    subscriptions    = ["source"]
  }

  # Composite indexes of the listings (GET /executions, dlq list).
  indexes = {
    "executions-parent-created"          = { collection = "executions", fields = [["parent_id", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-status-created"          = { collection = "executions", fields = [["status", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-playbook-created"        = { collection = "executions", fields = [["playbook", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-playbook-status-created" = { collection = "executions", fields = [["playbook", "ASCENDING"], ["status", "ASCENDING"], ["created_at", "DESCENDING"]] }
    # Callers below the operator role list their own executions only.
    "executions-creator-created"                 = { collection = "executions", fields = [["creator", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-creator-status-created"          = { collection = "executions", fields = [["creator", "ASCENDING"], ["status", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-creator-playbook-created"        = { collection = "executions", fields = [["creator", "ASCENDING"], ["playbook", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "executions-creator-playbook-status-created" = { collection = "executions", fields = [["creator", "ASCENDING"], ["playbook", "ASCENDING"], ["status", "ASCENDING"], ["created_at", "DESCENDING"]] }
    "dlq-status-last-seen"                       = { collection = "dlq", fields = [["status", "ASCENDING"], ["last_seen", "DESCENDING"]] }
  }

  # Service settings per function; var.functions overrides any field.
  # Every function takes more than one request at a time, so each has at
  # least one vCPU (Cloud Run's rule).
  function_defaults = {
    api         = { memory = "512Mi", cpu = 1, timeout_s = 60, concurrency = 80, min_instances = 0, max_instances = 20 }
    emit        = { memory = "512Mi", cpu = 1, timeout_s = 60, concurrency = 80, min_instances = 0, max_instances = 20 }
    execute     = { memory = "1Gi", cpu = 1, timeout_s = 900, concurrency = 8, min_instances = 0, max_instances = 100 }
    route       = { memory = "512Mi", cpu = 1, timeout_s = 120, concurrency = 40, min_instances = 0, max_instances = 50 }
    materialize = { memory = "512Mi", cpu = 1, timeout_s = 60, concurrency = 80, min_instances = 0, max_instances = 20 }
    dispatch    = { memory = "512Mi", cpu = 1, timeout_s = 60, concurrency = 80, min_instances = 0, max_instances = 20 }
    subscribe   = { memory = "512Mi", cpu = 1, timeout_s = 120, concurrency = 40, min_instances = 0, max_instances = 20 }
  }
  function_settings = {
    for name, d in local.function_defaults : name => {
      for field, value in d : field => try(coalesce(var.functions[name][field], value), value)
    }
  }

  # Megabytes of a memory setting ("512Mi", "2Gi").
  memory_mb = { for name, s in local.function_settings : name => endswith(s.memory, "Gi") ? tonumber(trimsuffix(s.memory, "Gi")) * 1024 : tonumber(trimsuffix(s.memory, "Mi")) }

  # Where the buildpack puts the source in the run image (NOETL_REPO_ROOT):
  # the Go functions buildpack moves it to serverless_function_source_code.
  repo_root = "/workspace/serverless_function_source_code"

  # Deterministic Cloud Run URL of a gen2 function (its service is named
  # like the function). Used for execute's URL and OIDC audience, which the
  # functions need before execute exists (no dependency cycle).
  run_url = { for name in keys(local.functions) : name => "https://noetl-${name}-${data.google_project.this.number}.${var.region}.run.app" }

  # Configuration of every function (shared/config registry; README
  # "Configuration"). Knobs marked Deploy in the registry must be here.
  env = merge({
    GOOGLE_CLOUD_PROJECT             = var.project
    NOETL_LOCATION                   = var.region
    NOETL_EVENTS_TOPIC               = google_pubsub_topic.topic["events"].name
    NOETL_COMMANDS_TOPIC             = google_pubsub_topic.topic["commands"].name
    NOETL_REPLAY_SUBSCRIPTION        = google_pubsub_subscription.replay.name
    NOETL_RETENTION_DAYS             = tostring(var.retention_days)
    NOETL_WORK_QUEUE                 = google_cloud_tasks_queue.queue["work"].name
    NOETL_TIMERS_QUEUE               = google_cloud_tasks_queue.queue["timers"].name
    NOETL_TASKS_MAX_ATTEMPTS         = tostring(var.tasks_max_attempts)
    NOETL_TASKS_MAX_BACKOFF_S        = tostring(max(var.queues["work"].max_backoff_s, var.queues["timers"].max_backoff_s))
    NOETL_EXECUTE_URL                = local.run_url["execute"]
    NOETL_EXECUTE_AUDIENCE           = local.run_url["execute"]
    NOETL_TASKS_SERVICE_ACCOUNT      = google_service_account.tasks.email
    NOETL_SUBSCRIBE_URL              = local.run_url["subscribe"]
    NOETL_PUSH_SERVICE_ACCOUNT       = google_service_account.push.email
    NOETL_PUSH_MAX_DELIVERY_ATTEMPTS = tostring(var.push.max_delivery_attempts)
    NOETL_RESULTS_BUCKET             = google_storage_bucket.results.name
    NOETL_RESULT_INLINE_MAX          = tostring(var.result_inline_max)
    NOETL_REPO_ROOT                  = local.repo_root
    NOETL_LEASE_TTL_S                = tostring(var.lease_ttl_s)
    NOETL_HEARTBEAT_INTERVAL_S       = tostring(var.heartbeat_interval_s)
    NOETL_DISPATCH_DEADLINE_S        = tostring(var.dispatch_deadline_s)
    NOETL_DLQ_RETENTION_DAYS         = tostring(var.dlq_retention_days)
    NOETL_TRACING_EXPORTER           = var.tracing_exporter
    NOETL_METRICS_EXPORTER           = "gcp"
    NOETL_API_AUDIENCES              = join(",", [local.run_url["api"], local.run_url["emit"]])
    NOETL_RUNNER_URL                 = local.runner_url
    NOETL_RUNNER_AUDIENCE            = local.runner_url
    NOETL_RUNNER_INVOKER             = google_service_account.fn["execute"].email
    # The cloud profile: the api and emit refuse to serve without roles,
    # credential values are read from Secret Manager.
    NOETL_PROFILE = "cloud"
    # Roles of the api's callers (YAML role: [principal, ...]): var.api_roles,
    # and admin for noetl-operator, the account var.operators impersonate.
    NOETL_API_ROLES = yamlencode(merge(var.api_roles, { admin = distinct(concat(lookup(var.api_roles, "admin", []), [google_service_account.operator.email])) }))
  }, var.extra_env)

  # Secret environment variables of each function: variable → Secret
  # Manager secret id (latest version). Every function signs or verifies
  # (NOETL_SIGNING_KEY); api and emit accept the optional static token.
  secret_env = { for name in keys(local.functions) : name => merge(
    { NOETL_SIGNING_KEY = google_secret_manager_secret.signing_key.secret_id },
    contains(["api", "emit"], name) && var.api_token_secret != "" ? { NOETL_API_TOKEN = var.api_token_secret } : {},
  ) }
}
