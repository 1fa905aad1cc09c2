package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The Kafka cluster and the S3 store of user data (README "Architecture":
// services authors may reach, not the engine's): franz-go's in-process
// cluster (kfake) and gofakes3 over an in-memory backend, both in the
// supervisor's process on 127.0.0.1, both forgetting their data when the
// stack stops (as the data GCS and Pub/Sub fakes do).

// KafkaBrokers is the bootstrap address of the stack's Kafka cluster
// (NOETL_KAFKA_BROKERS in .stack/env; kafka credentials name it).
func (c Config) KafkaBrokers() string { return hostPort(c.KafkaPort) }

// S3URL is the endpoint of the stack's S3 store (NOETL_S3_URL in
// .stack/env; s3 credentials name it as their endpoint).
func (c Config) S3URL() string { return "http://" + hostPort(c.S3Port) }

// kafkaPartitions is the partition count of a topic the cluster creates
// on first use (Kafka's num.partitions default).
const kafkaPartitions = 1

// startKafka starts a one-broker kfake cluster on c.KafkaPort. Topics are
// created by clients (kadm, or a producer that asks for auto creation,
// as a broker with auto.create.topics.enable does).
func startKafka(c Config) (*kfake.Cluster, error) {
	k, err := kfake.NewCluster(kfake.Ports(c.KafkaPort), kfake.ClusterID("noetl-local"),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(kafkaPartitions))
	if err != nil {
		return nil, fmt.Errorf("data Kafka on %s: %w", c.KafkaBrokers(), err)
	}
	return k, nil
}

// s3Server is the stack's S3 store: gofakes3 over an in-memory backend.
// It does not check request signatures: any access key is accepted (the
// s3 credentials of the stack name placeholder keys). Buckets are created
// as in S3 (PUT /<bucket>), never on first use.
type s3Server struct {
	srv *http.Server
	// Backend is the store itself (tests read it directly).
	Backend *s3mem.Backend
}

// startS3 listens on c.S3Port and serves the store; log gets the error
// that ends the server early.
func startS3(c Config, log *slog.Logger) (*s3Server, error) {
	l, err := net.Listen("tcp", hostPort(c.S3Port))
	if err != nil {
		return nil, fmt.Errorf("data S3 on %s: %w", hostPort(c.S3Port), err)
	}
	be := s3mem.New()
	fake := gofakes3.New(be, gofakes3.WithoutVersioning())
	s := &s3Server{srv: &http.Server{Handler: fake.Server(), ReadHeaderTimeout: 10 * time.Second}, Backend: be}
	go func() {
		if err := s.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			log.Error("data S3 server ended", "error", err)
		}
	}()
	return s, nil
}

// stop shuts the server down.
func (s *s3Server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
