output "api_url" {
  description = "URL of the api function (POST /executions, GET /executions/{id}, ...): call it with an identity token"
  value       = google_cloudfunctions2_function.fn["api"].service_config[0].uri
}

output "emit_url" {
  description = "URL of the emit function (external events)"
  value       = google_cloudfunctions2_function.fn["emit"].service_config[0].uri
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
  value       = merge({ for k, s in google_service_account.fn : k => s.email }, { tasks = google_service_account.tasks.email, push = google_service_account.push.email, build = google_service_account.build.email })
}

output "runner_url" {
  description = "URL of the runner (the data plane; only execute may invoke it)"
  value       = local.runner_url
}

output "runner_image" {
  description = "Image the runner's service runs: build it with gcloud builds submit --config runner/cloudbuild.yaml --substitutions _IMAGE=<this> ."
  value       = local.runner_image
}
