package stack

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/results/grant"
)

// The results gateway (README "Stored results and the runner"): the
// runner reaches the engine's results only through V4 signed URLs that
// execute signs per attempt. Cloud Storage verifies them in GCP;
// fake-gcs-server does not, so the stack puts this gateway in front of
// the engine's GCS emulator: it serves the signed-URL subset of the XML
// API (grant.Gateway) and refuses every request whose signature is not
// execute's for exactly that object, method and time. The runner's
// egress policy admits the gateway and denies the emulator itself.

// ResultsGatewayURL is the gateway's base URL (execute's
// NOETL_RESULTS_SIGNED_ENDPOINT: the host its signed URLs name).
func (c Config) ResultsGatewayURL() string { return "http://" + hostPort(c.ResultsGatewayPort) }

// ResultsKeyFile is execute's private key for result grants (mode 0600,
// root's); the gateway holds its public half.
func (c Config) ResultsKeyFile() string { return filepath.Join(c.StackDir, "results-auth", "key.pem") }

// upGateway makes execute's grant key (a new one per start) and starts
// the gateway over the engine's GCS emulator.
func (s *Supervisor) upGateway(ctx context.Context) (string, error) {
	c := s.cfg
	key, _, err := newKeyFile(c.ResultsKeyFile(), 0o700)
	if err != nil {
		return "", fmt.Errorf("results grant key: %w", err)
	}
	lg, _, err := s.componentLogger("gateway")
	if err != nil {
		return "", err
	}
	// A client of the emulator's JSON API (reads too, as the functions'
	// STORAGE_EMULATOR_HOST client: the emulator honours a pinned
	// generation there).
	client, err := storage.NewClient(ctx, option.WithEndpoint("http://"+hostPort(c.GCSPort)+"/storage/v1/"),
		option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		return "", fmt.Errorf("results gateway: storage client: %w", err)
	}
	s.gatewayGCS = client
	gw := &grant.Gateway{
		Keys: map[string]*rsa.PublicKey{c.RunnerInvoker(): &key.PublicKey},
		// Any bucket of the engine's emulator (the results bucket and the
		// cells of a NOETL_RESULT_CELLS_FILE): the signature, not the
		// bucket, is the right.
		Backend: func(bucket string) (results.Backend, bool) { return gcsresults.NewGCS(client, bucket), true },
		Log:     lg,
	}
	l, err := net.Listen("tcp", hostPort(c.ResultsGatewayPort))
	if err != nil {
		return "", fmt.Errorf("results gateway: %w", err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 30 * time.Second}
	s.gateway = srv
	go func() { _ = srv.Serve(l) }()
	return " at " + c.ResultsGatewayURL(), nil
}
