package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// NATSURL is the client URL of the stack's NATS server (exported as
// NATS_URL in .stack/env; the nats task kind and the nats credentials of
// the conformance playbooks point at it).
func (c Config) NATSURL() string { return "nats://" + hostPort(c.NATSPort) }

// NATSStoreDir is where the NATS server keeps JetStream data (key-value
// buckets and streams survive a restart of the stack).
func (c Config) NATSStoreDir() string { return filepath.Join(c.StackDir, "nats") }

// natsServer is the embedded NATS server (github.com/nats-io/nats-server,
// the NATS project's own server, run in the supervisor's process) with
// JetStream, listening on 127.0.0.1 without authentication: clients may
// present any user and password (the conformance credentials do).
type natsServer struct{ s *natsserver.Server }

// startNATS starts the server and waits until it accepts clients.
func startNATS(c Config) (*natsServer, error) {
	if err := os.MkdirAll(c.NATSStoreDir(), 0o755); err != nil {
		return nil, err
	}
	opts := &natsserver.Options{
		ServerName: "noetl-local",
		Host:       "127.0.0.1",
		Port:       c.NATSPort,
		JetStream:  true,
		StoreDir:   c.NATSStoreDir(),
		LogFile:    c.LogPath("nats"),
		NoSigs:     true,
		// The default 1 MiB max payload fits the KV values playbooks store.
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, err
	}
	s.ConfigureLogger()
	go s.Start()
	if !s.ReadyForConnections(15 * time.Second) {
		s.Shutdown()
		return nil, errors.New("the NATS server did not accept connections within 15s")
	}
	if !s.JetStreamEnabled() {
		s.Shutdown()
		return nil, errors.New("the NATS server started without JetStream")
	}
	return &natsServer{s: s}, nil
}

// stop shuts the server down and waits for it.
func (n *natsServer) stop() {
	n.s.Shutdown()
	n.s.WaitForShutdown()
}

func (s *Supervisor) upNATS(context.Context) (string, error) {
	n, err := startNATS(s.cfg)
	if err != nil {
		return "", err
	}
	s.nats = n
	return fmt.Sprintf(" at %s (JetStream; data %s)", s.cfg.NATSURL(), s.cfg.NATSStoreDir()), nil
}
