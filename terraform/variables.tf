variable "project" {
  description = "Google Cloud project id"
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a Google Cloud project id (6-30 lowercase letters, digits, hyphens)."
  }
}

variable "region" {
  description = "Region of the functions, queues and buckets"
  type        = string
  default     = "us-central1"
}

variable "firestore_location" {
  description = "Firestore location (multi-region nam5/eur3 or a region)"
  type        = string
  default     = "nam5"
}

variable "firestore_delete_protection" {
  description = "Protect the Firestore database from deletion"
  type        = bool
  default     = true
}

variable "source_bucket" {
  description = "Existing bucket for the function source zip (empty: Terraform creates <project>-noetl-source)"
  type        = string
  default     = ""
}

variable "go_runtime" {
  description = "Cloud Functions Go runtime; must match the go directive of go.mod (go 1.26.x -> go126)"
  type        = string
  default     = "go126"
  validation {
    condition     = can(regex("^go1[0-9]{2}$", var.go_runtime))
    error_message = "go_runtime must look like go126."
  }
}

variable "functions" {
  description = <<-EOT
    Per-function overrides of the service settings (keys: api, emit, execute,
    route, materialize, dispatch, subscribe; unset fields keep the defaults of
    locals.tf): memory ("512Mi", "1Gi"), cpu (vCPUs), timeout_s, concurrency
    (requests per instance), min_instances, max_instances.
  EOT
  type = map(object({
    memory        = optional(string)
    cpu           = optional(number)
    timeout_s     = optional(number)
    concurrency   = optional(number)
    min_instances = optional(number)
    max_instances = optional(number)
  }))
  default = {}
  validation {
    condition     = alltrue([for k in keys(var.functions) : contains(["api", "emit", "execute", "route", "materialize", "dispatch", "subscribe"], k)])
    error_message = "functions keys must be among api, emit, execute, route, materialize, dispatch, subscribe."
  }
  validation {
    condition     = alltrue([for v in values(var.functions) : v.memory == null || can(regex("^[0-9]+(Mi|Gi)$", v.memory))])
    error_message = "memory must look like 512Mi or 2Gi."
  }
  validation {
    condition     = alltrue([for v in values(var.functions) : v.cpu == null || try(v.cpu >= 0.083 && v.cpu <= 8, false)])
    error_message = "cpu must be between 0.083 and 8 vCPUs."
  }
  validation {
    condition     = alltrue([for v in values(var.functions) : v.timeout_s == null || try(v.timeout_s >= 1 && v.timeout_s <= 3600, false)])
    error_message = "timeout_s must be between 1 and 3600 seconds."
  }
  validation {
    condition     = alltrue([for v in values(var.functions) : v.concurrency == null || try(v.concurrency >= 1 && v.concurrency <= 1000, false)])
    error_message = "concurrency must be between 1 and 1000."
  }
  validation {
    # Cloud Run rejects more than one concurrent request per instance with
    # less than one vCPU.
    condition     = alltrue([for v in values(var.functions) : v.concurrency == null || v.cpu == null || try(v.concurrency == 1 || v.cpu >= 1, false)])
    error_message = "concurrency > 1 requires cpu >= 1."
  }
  validation {
    condition = alltrue([for v in values(var.functions) :
      (v.min_instances == null || try(v.min_instances >= 0, false)) &&
      (v.max_instances == null || try(v.max_instances >= 1, false)) &&
    (v.min_instances == null || v.max_instances == null || try(v.min_instances <= v.max_instances, false))])
    error_message = "min_instances must be >= 0, max_instances >= 1, and min_instances <= max_instances."
  }
}

variable "api_invokers" {
  description = "Service accounts (or other principals) that call the api and emit functions with identity tokens of their own, minted for the api_url/emit_url audience (people: var.operators)"
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for m in var.api_invokers : can(regex("^(user|group|serviceAccount|domain|principal|principalSet):", m))])
    error_message = "api_invokers must be IAM members such as user:me@example.com (allUsers is not allowed: the api requires authentication)."
  }
}

variable "operators" {
  description = "People or groups (user:..., group:...) who call the api and emit by impersonating noetl-operator (roles/iam.serviceAccountTokenCreator on it)"
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for m in var.operators : can(regex("^(user|group|domain|serviceAccount|principal|principalSet):", m))])
    error_message = "operators must be IAM members such as user:me@example.com or group:ops@example.com."
  }
}

variable "api_roles" {
  description = "Roles of the api's callers (NOETL_API_ROLES): role (viewer, runner, operator, admin) => principals (emails, *@domain). Without it the api and emit serve no one (the cloud profile's roles default closed)"
  type        = map(list(string))
  default     = {}
  validation {
    condition     = alltrue([for r in keys(var.api_roles) : contains(["viewer", "runner", "operator", "admin"], r)])
    error_message = "api_roles keys must be viewer, runner, operator or admin."
  }
}

variable "dispatch_deadline_s" {
  description = "Cloud Tasks dispatch deadline of a unit (NOETL_DISPATCH_DEADLINE_S); execute's timeout must cover it"
  type        = number
  default     = 600
  validation {
    condition     = var.dispatch_deadline_s >= 15 && var.dispatch_deadline_s <= 1800
    error_message = "dispatch_deadline_s must be between 15 and 1800 (Cloud Tasks HTTP targets)."
  }
}

variable "lease_ttl_s" {
  description = "Lease of a unit of work (NOETL_LEASE_TTL_S), renewed by the heartbeat; shorter than dispatch_deadline_s"
  type        = number
  default     = 30
}

variable "heartbeat_interval_s" {
  description = "Lease renewal interval (NOETL_HEARTBEAT_INTERVAL_S); shorter than lease_ttl_s"
  type        = number
  default     = 10
}

variable "queues" {
  description = "Rate limits and retry config of the Cloud Tasks queues (work, timers)"
  type = map(object({
    max_dispatches_per_second = number
    max_concurrent_dispatches = number
    min_backoff_s             = number
    max_backoff_s             = number
    max_doublings             = number
  }))
  default = {
    work   = { max_dispatches_per_second = 500, max_concurrent_dispatches = 200, min_backoff_s = 1, max_backoff_s = 60, max_doublings = 5 }
    timers = { max_dispatches_per_second = 100, max_concurrent_dispatches = 100, min_backoff_s = 1, max_backoff_s = 60, max_doublings = 5 }
  }
  validation {
    condition     = length(setsubtract(toset(["work", "timers"]), toset(keys(var.queues)))) == 0 && length(keys(var.queues)) == 2
    error_message = "queues must configure exactly work and timers."
  }
  validation {
    condition = alltrue([for q in values(var.queues) :
      q.max_dispatches_per_second > 0 && q.max_dispatches_per_second <= 500 &&
      q.max_concurrent_dispatches >= 1 && q.max_concurrent_dispatches <= 5000 &&
      q.min_backoff_s > 0 && q.min_backoff_s <= q.max_backoff_s && q.max_doublings >= 0
    ])
    error_message = "queue limits: 0 < dispatches/s <= 500, 1 <= concurrent <= 5000, 0 < min_backoff_s <= max_backoff_s."
  }
}

variable "tasks_max_attempts" {
  description = "Attempts of a Cloud Task in both queues (NOETL_TASKS_MAX_ATTEMPTS: execute files the last attempt in the DLQ)"
  type        = number
  default     = 30
  validation {
    condition     = var.tasks_max_attempts >= 1 && var.tasks_max_attempts <= 1000
    error_message = "tasks_max_attempts must be between 1 and 1000."
  }
}

variable "push" {
  description = "Push subscription delivery: attempts before the dead-letter topic (5-100) and retry backoff"
  type = object({
    max_delivery_attempts = number
    min_backoff_s         = number
    max_backoff_s         = number
  })
  default = { max_delivery_attempts = 10, min_backoff_s = 1, max_backoff_s = 60 }
  validation {
    condition     = var.push.max_delivery_attempts >= 5 && var.push.max_delivery_attempts <= 100
    error_message = "max_delivery_attempts must be between 5 and 100 (Pub/Sub dead-letter policy)."
  }
  validation {
    condition     = var.push.min_backoff_s >= 0 && var.push.max_backoff_s <= 600 && var.push.min_backoff_s <= var.push.max_backoff_s
    error_message = "push backoff must satisfy 0 <= min_backoff_s <= max_backoff_s <= 600."
  }
}

variable "events_retention" {
  description = "Retention of the events topic (the event log), for seek/replay"
  type        = string
  default     = "604800s"
}

variable "result_inline_max" {
  description = "Largest result (bytes of JSON) kept inline; larger ones go to the results bucket (NoETL result storage RFC)"
  type        = number
  default     = 65536
}

variable "retention_days" {
  description = "Days an ended execution's record, event read model and results are kept (NOETL_RETENTION_DAYS: the expire_at of its Firestore documents; `noetl gc` deletes its results after as long)"
  type        = number
  default     = 30
  validation {
    condition     = var.retention_days >= 1 && var.retention_days <= 3650
    error_message = "retention_days must be between 1 and 3650."
  }
}

variable "results_retention_days" {
  description = "Age (days) after which the results bucket's lifecycle rule deletes an object: only a backstop for objects `noetl gc` never saw, so it must exceed retention_days plus the longest an execution runs (the GC deletes an execution's results retention_days after it ends)"
  type        = number
  default     = 60
  validation {
    condition     = var.results_retention_days >= 1
    error_message = "results_retention_days must be at least 1."
  }
}

variable "dlq_retention_days" {
  description = "Days a DLQ entry is kept (NOETL_DLQ_RETENTION_DAYS, the entry's expire_at)"
  type        = number
  default     = 30
}

variable "credentials" {
  description = "Names of the credentials playbook keychains use (one Secret Manager secret noetl-cred-<name> each)"
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for c in var.credentials : can(regex("^[A-Za-z0-9_-]{1,240}$", c))])
    error_message = "credential names must be 1-240 letters, digits, _ or -."
  }
}

variable "api_token_secret" {
  description = "Optional Secret Manager secret id whose latest version is a static bearer token the api accepts (NOETL_API_TOKEN)"
  type        = string
  default     = ""
}

variable "extra_env" {
  description = "Additional NOETL_* configuration for every function (README Configuration), e.g. NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS"
  type        = map(string)
  default     = {}
  validation {
    condition     = alltrue([for k in keys(var.extra_env) : can(regex("^NOETL_[A-Z0-9_]+$", k))])
    error_message = "extra_env keys must be NOETL_* variables."
  }
}

variable "tracing_exporter" {
  description = "Span exporter (NOETL_TRACING_EXPORTER): gcp (Cloud Trace), otlp or none"
  type        = string
  default     = "gcp"
  validation {
    condition     = contains(["gcp", "otlp", "none"], var.tracing_exporter)
    error_message = "tracing_exporter must be gcp, otlp or none."
  }
}

variable "notification_channels" {
  description = "Cloud Monitoring notification channel ids for the alert policies"
  type        = list(string)
  default     = []
}

variable "runner_image" {
  description = "Image of the runner (empty: <region>-docker.pkg.dev/<project>/noetl/runner:latest, which `gcloud builds submit --config runner/cloudbuild.yaml` pushes)"
  type        = string
  default     = ""
}

variable "runner" {
  description = <<-EOT
    The runner's Cloud Run service and its tasks' limits: concurrency
    (requests per instance; 1 keeps authors' code apart), cpu, memory,
    min/max instances, per-task memory, CPU seconds and workspace (disk) of
    the sandbox, DuckDB's memory, egress_allow (destinations user code may
    reach despite the policy: host, host:port, CIDR; e.g. a private
    database), extra_env (more NOETL_* knobs of the runner).
  EOT
  type = object({
    concurrency      = optional(number, 1)
    cpu              = optional(number, 1)
    memory           = optional(string, "2Gi")
    min_instances    = optional(number, 0)
    max_instances    = optional(number, 50)
    task_memory_mb   = optional(number, 1024)
    task_cpu_s       = optional(number, 300)
    task_disk_mb     = optional(number, 512)
    duckdb_memory_mb = optional(number, 512)
    egress_allow     = optional(list(string), [])
    extra_env        = optional(map(string), {})
  })
  default = {}
  validation {
    condition     = var.runner.concurrency >= 1 && var.runner.concurrency <= 1000
    error_message = "runner.concurrency must be between 1 and 1000."
  }
}
