output "api_url" {
  description = "HTTP trigger of the api function (POST /executions)"
  value       = google_cloudfunctions2_function.fn["api"].service_config[0].uri
}

output "results_bucket" {
  value = google_storage_bucket.results.name
}
