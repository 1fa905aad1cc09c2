// Command stack is the local GCP stack supervisor: it starts the Pub/Sub and
// Firestore emulators, fake GCS, the Cloud Tasks emulator, the fixture
// services, PostgreSQL and the functions server, provisions them, bridges
// Pub/Sub push delivery to the functions, writes .stack/env and .stack/ready,
// and stops everything but PostgreSQL on SIGTERM or SIGINT.
//
// It is configured from the environment (see emulators/stack.Config); run it
// through scripts/up, which builds it and waits for it to be ready. Progress
// lines go to stdout, JSON logs to stderr.
//
// "stack -check" only reads and checks the configuration (scripts/up runs
// it before it restarts a running stack for a new setting, so that a bad
// one does not take the running stack down): exit 0, or 2 with the
// problems on stderr.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/noetl/gcpengine/emulators/stack"
)

func main() {
	cfg, err := stack.LoadConfig(os.Getenv)
	if len(os.Args) > 1 {
		if os.Args[1] != "-check" || len(os.Args) > 2 {
			fmt.Fprintf(os.Stderr, "stack: unknown arguments %q (only -check)\n", os.Args[1:])
			os.Exit(2)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "configuration: %v\n", err)
			os.Exit(2)
		}
		return
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		fmt.Fprintf(os.Stdout, "stack: ERROR: configuration: %v\n", err)
		logger.Error("configuration", "error", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Run prints its errors as progress lines too.
	if err := stack.NewSupervisor(cfg, logger, os.Stdout).Run(ctx); err != nil {
		logger.Error("stack failed", "error", err)
		stop()
		os.Exit(1)
	}
}
