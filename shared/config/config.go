// Package config reads the engine's runtime configuration from the
// environment. Every knob has a default that matches the local emulator
// stack (emulators/stack); README "Configuration" lists them all.
package config

import (
	"os"
	"strconv"
	"time"
)

// Config is the process configuration shared by all functions.
type Config struct {
	Project  string // GOOGLE_CLOUD_PROJECT, default "noetl-local"
	Location string // NOETL_LOCATION, default "us-central1"
	// EventsTopic carries the event log (ordering key = execution id).
	EventsTopic string // NOETL_EVENTS_TOPIC, default "events"
	// CommandsTopic carries units of work from route to dispatch.
	CommandsTopic string // NOETL_COMMANDS_TOPIC, default "commands"
	WorkQueue     string // NOETL_WORK_QUEUE, default "work"
	TimersQueue   string // NOETL_TIMERS_QUEUE, default "timers"
	// FunctionsURL is the base URL the execute function is reachable at,
	// used as the Cloud Task target (FunctionsURL + "/execute").
	FunctionsURL string // NOETL_FUNCTIONS_URL, default "http://127.0.0.1:8680"
	// ExecuteURL is the Cloud Task target; in the cloud each gen2 function
	// has its own URL, so it can be set apart from FunctionsURL.
	ExecuteURL string // NOETL_EXECUTE_URL, default FunctionsURL + "/execute"
	// ResultsBucket is the GCS bucket of over-budget results.
	ResultsBucket string // NOETL_RESULTS_BUCKET, default "noetl-results"
	// ResultInlineMax is the largest JSON result (bytes) kept inline in
	// events and state; larger ones go to the results tier (seed 004).
	ResultInlineMax int // NOETL_RESULT_INLINE_MAX, default 65536
	// RepoRoot resolves playbook paths given to the api (POST {path}).
	RepoRoot string // NOETL_REPO_ROOT, default "."
	// LeaseTTL bounds how long an execute call holds a unit's lease.
	LeaseTTL time.Duration // NOETL_LEASE_TTL_S, default 900s
	// DefaultMaxInFlight is a parallel loop's max_in_flight when unset.
	DefaultMaxInFlight int // NOETL_DEFAULT_MAX_IN_FLIGHT, default 10
	// PythonBin is the interpreter for python tasks.
	PythonBin string // NOETL_PYTHON, default "python3"
	// PGDSN is the default PostgreSQL connection for postgres tasks that
	// name no connection (workload pg_dsn wins over it).
	PGDSN string // NOETL_PG_DSN, default ""
}

// Load reads Config from the environment.
func Load() Config {
	c := Config{
		Project:            env("GOOGLE_CLOUD_PROJECT", "noetl-local"),
		Location:           env("NOETL_LOCATION", "us-central1"),
		EventsTopic:        env("NOETL_EVENTS_TOPIC", "events"),
		CommandsTopic:      env("NOETL_COMMANDS_TOPIC", "commands"),
		WorkQueue:          env("NOETL_WORK_QUEUE", "work"),
		TimersQueue:        env("NOETL_TIMERS_QUEUE", "timers"),
		FunctionsURL:       env("NOETL_FUNCTIONS_URL", "http://127.0.0.1:8680"),
		ResultsBucket:      env("NOETL_RESULTS_BUCKET", "noetl-results"),
		ResultInlineMax:    envInt("NOETL_RESULT_INLINE_MAX", 65536),
		RepoRoot:           env("NOETL_REPO_ROOT", "."),
		LeaseTTL:           time.Duration(envInt("NOETL_LEASE_TTL_S", 900)) * time.Second,
		DefaultMaxInFlight: envInt("NOETL_DEFAULT_MAX_IN_FLIGHT", 10),
		PythonBin:          env("NOETL_PYTHON", "python3"),
		PGDSN:              env("NOETL_PG_DSN", ""),
	}
	c.ExecuteURL = env("NOETL_EXECUTE_URL", c.FunctionsURL+"/execute")
	return c
}

// QueuePath returns projects/P/locations/L/queues/name.
func (c Config) QueuePath(name string) string {
	return "projects/" + c.Project + "/locations/" + c.Location + "/queues/" + name
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v := os.Getenv(k); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}
