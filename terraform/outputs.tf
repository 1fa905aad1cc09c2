# The api's and emit's deterministic Cloud Run URLs: the audiences they
# accept (NOETL_API_AUDIENCES) are exactly these, so an identity token
# minted for this URL (gcloud auth print-identity-token --audiences) is
# accepted. service_config[0].uri may be the other (hash) form of the URL.
output "api_url" {
  description = "URL of the api function (POST /executions, GET /executions/{id}, ...) and the audience of its identity tokens"
  value       = local.run_url["api"]
}

output "emit_url" {
  description = "URL of the emit function (external events) and the audience of its identity tokens"
  value       = local.run_url["emit"]
}

output "operator_service_account" {
  description = "Service account the principals of var.operators impersonate to call the api and emit (gcloud auth print-identity-token --impersonate-service-account)"
  value       = google_service_account.operator.email
}

output "execute_url" {
  description = "URL of the execute function (Cloud Tasks target and OIDC audience)"
  value       = local.run_url["execute"]
}

output "subscribe_url" {
  description = "URL of the subscribe function: registered subscriptions push to <url>/push/<name> (NOETL_SUBSCRIBE_URL)"
  value       = local.run_url["subscribe"]
}

output "functions" {
  description = "Deployed function names by entry point"
  value       = { for k, f in google_cloudfunctions2_function.fn : k => f.name }
}

output "topics" {
  description = "Pub/Sub topics by name"
  value       = { for k, t in google_pubsub_topic.topic : k => t.id }
}

output "subscriptions" {
  description = "Pub/Sub subscriptions (push, dead-letter inspect, and those of var.subscriptions) by name"
  value       = merge({ for k, s in google_pubsub_subscription.push : k => s.id }, { for k, s in google_pubsub_subscription.inspect : k => s.id }, { for k, s in google_pubsub_subscription.registered : k => s.id })
}

output "queues" {
  description = "Cloud Tasks queues by name"
  value       = { for k, q in google_cloud_tasks_queue.queue : k => q.id }
}

output "results_bucket" {
  description = "GCS bucket of the results tier"
  value       = google_storage_bucket.results.name
}

output "service_accounts" {
  description = "Service account emails: one per function, the Cloud Tasks OIDC account and the push account"
  value       = merge({ for k, s in google_service_account.fn : k => s.email }, { tasks = google_service_account.tasks.email, push = google_service_account.push.email, build = google_service_account.build.email, operator = google_service_account.operator.email })
}

output "runner_url" {
  description = "URL of the runner (the data plane; only execute may invoke it)"
  value       = local.runner_url
}

output "runner_image" {
  description = "Image the runner's service runs: build it with gcloud builds submit --config runner/cloudbuild.yaml --substitutions _IMAGE=<this> ."
  value       = local.runner_image
}
