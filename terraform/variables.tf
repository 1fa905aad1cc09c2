variable "project" {
  description = "Google Cloud project id"
  type        = string
}

variable "region" {
  description = "Region of the functions, queues and bucket"
  type        = string
  default     = "us-central1"
}

variable "firestore_location" {
  description = "Firestore location (multi-region nam5 or a region)"
  type        = string
  default     = "nam5"
}

variable "source_bucket" {
  description = "Existing bucket that receives the function source zip"
  type        = string
}

variable "work_concurrency" {
  description = "max_concurrent_dispatches of the work and timers queues"
  type        = number
  default     = 64
}

variable "result_inline_max" {
  description = "Largest result (bytes of JSON) kept inline; larger ones go to GCS (seed 004)"
  type        = number
  default     = 65536
}

variable "results_retention_days" {
  description = "Age after which result objects are deleted"
  type        = number
  default     = 30
}

variable "credentials" {
  description = "Names of the credentials playbook keychains use (one Secret Manager secret each)"
  type        = list(string)
  default     = []
}
