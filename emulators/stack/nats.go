package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// NATS users of the stack's server (natsConfig).
const (
	// NATSTaskUser is the user of the tasks' account: a playbook reaches
	// the server with a nats credential holding it and its password.
	NATSTaskUser = "noetl-task"
	// NATSAdminUser is the user of the operators' account (its own
	// JetStream, apart from the tasks').
	NATSAdminUser = "noetl-admin"
)

// natsServer is the embedded NATS server (github.com/nats-io/nats-server,
// the NATS project's own server, run in the supervisor's process) with
// JetStream, listening on 127.0.0.1 (natsConfig).
type natsServer struct{ s *natsserver.Server }

// natsConfig is the server's configuration (NATS's configuration
// language): authentication is required, with two accounts apart — the
// tasks' (NATSTaskUser), bounded by the NOETL_NATS_TASK_* limits (its
// JetStream file storage and memory, its streams and consumers, its
// connections at once), and the operators' (NATSAdminUser). A client
// without a user, or with another password, is refused ("Authorization
// Violation"); a JetStream write over the tasks' account's storage is
// refused by the server (insufficient resources), a connection over its
// connection limit too (maximum account active connections exceeded).
func natsConfig(c Config) string {
	q := strconv.Quote
	return fmt.Sprintf(`server_name: noetl-local
host: 127.0.0.1
port: %d
jetstream {
  store_dir: %s
}
accounts {
  NOETL_TASKS {
    users: [ {user: %s, password: %s} ]
    jetstream {
      max_file: %d
      max_mem: %d
      max_streams: 64
      max_consumers: 256
    }
    limits { max_connections: %d }
  }
  NOETL_ADMIN {
    users: [ {user: %s, password: %s} ]
    jetstream: enabled
  }
}
`, c.NATSPort, q(c.NATSStoreDir()), q(NATSTaskUser), q(c.NATSTaskPassword), int64(c.NATSTaskStoreMB)<<20, int64(c.NATSTaskMemoryMB)<<20,
		c.NATSTaskConnections, q(NATSAdminUser), q(c.NATSAdminPassword))
}

// startNATS starts the server and waits until it accepts clients.
func startNATS(c Config) (*natsServer, error) {
	if err := os.MkdirAll(c.NATSStoreDir(), 0o755); err != nil {
		return nil, err
	}
	if c.NATSTaskPassword == "" || c.NATSAdminPassword == "" {
		return nil, errors.New("the NATS passwords are not set (EnsureSecrets)")
	}
	opts := &natsserver.Options{}
	if err := opts.ProcessConfigString(natsConfig(c)); err != nil {
		return nil, fmt.Errorf("NATS configuration: %w", err)
	}
	opts.LogFile, opts.NoSigs = c.LogPath("nats"), true
	// The default 1 MiB max payload fits the KV values playbooks store.
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
	return fmt.Sprintf(" at %s (JetStream; users %s, limits %d MiB stored, %d MiB memory, %d connections; %s; data %s)", s.cfg.NATSURL(), NATSTaskUser,
		s.cfg.NATSTaskStoreMB, s.cfg.NATSTaskMemoryMB, s.cfg.NATSTaskConnections, NATSAdminUser, s.cfg.NATSStoreDir()), nil
}
