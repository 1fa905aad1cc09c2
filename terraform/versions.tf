# Providers. scripts/check-terraform validates this configuration against
# the schemas of the providers it builds from their Go modules (pinned
# there): google 8.0, random 3.9, archive 2.8. The constraints admit the
# majors validated.
terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 8.0, < 9.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3.0" # excludes with doublestar globs
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.6, < 4.0" # random_bytes (the signing key) is 3.6
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
