# Providers. The Google provider 6.x/7.x has everything used here:
# gen2 functions with available_cpu, queue-level http_target (OIDC),
# Firestore TTL policies (google_firestore_field ttl_config).
terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 8.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4" # excludes with doublestar globs
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5" # random_bytes (the signing key)
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

data "google_project" "this" {
  project_id = var.project
}
