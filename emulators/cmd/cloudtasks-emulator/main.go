// Command cloudtasks-emulator serves an in-memory emulation of the Google
// Cloud Tasks v2 gRPC API (HTTP-target tasks) for local development and
// tests.
//
// Usage:
//
//	cloudtasks-emulator [--host 127.0.0.1] [--port 8684]
//
// The default port is 8684, or $NOETL_TASKS_PORT when set. Point the
// official client at it with option.WithEndpoint("127.0.0.1:8684"),
// option.WithoutAuthentication() and insecure transport credentials.
// Logs are JSON lines on stderr (one per dispatch attempt). SIGINT or
// SIGTERM stops it gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cloudtasks-emulator:", err)
		os.Exit(1)
	}
}

func run() error {
	defPort := 8684
	if v := os.Getenv("NOETL_TASKS_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("invalid NOETL_TASKS_PORT %q", v)
		}
		defPort = p
	}
	host := flag.String("host", "127.0.0.1", "interface to listen on")
	port := flag.Int("port", defPort, "TCP port to listen on; $NOETL_TASKS_PORT overrides the default")
	minDeadline := flag.Duration("min-dispatch-deadline", cloudtasks.DefaultMinDispatchDeadline,
		"lower clamp applied to task dispatch_deadline")
	tombstone := flag.Duration("tombstone-ttl", cloudtasks.DefaultTombstoneTTL,
		"how long names of completed or deleted tasks stay reserved")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(logger)

	lis, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	srv := cloudtasks.NewServer(cloudtasks.Options{
		Logger:              logger,
		TombstoneTTL:        *tombstone,
		MinDispatchDeadline: *minDeadline,
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	logger.Info("cloud tasks emulator listening", "addr", lis.Addr().String())

	select {
	case err := <-errc:
		srv.Stop()
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	stop() // a second signal kills the process

	done := make(chan struct{})
	go func() { srv.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return errors.New("graceful shutdown timed out")
	}
	if err := <-errc; err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
