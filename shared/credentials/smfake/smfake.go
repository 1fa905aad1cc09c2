// Package smfake is an in-process fake of Google Secret Manager's gRPC
// API (google.cloud.secretmanager.v1.SecretManagerService), enough for the
// credentials Secret Manager driver: secrets are created, versions added
// (numbered 1, 2, ... per secret, CRC32C checked), accessed by number or
// "latest", listed and destroyed, with the real service's status codes
// (NotFound for a missing secret or version, AlreadyExists for a second
// create, FailedPrecondition to access a destroyed version,
// InvalidArgument for malformed names or a bad checksum). The official
// client (cloud.google.com/go/secretmanager) talks to it through Start,
// so the driver is tested as it runs against GCP.
package smfake

import (
	"context"
	"fmt"
	"hash/crc32"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Server is the fake service. Its zero value is not usable; call New.
type Server struct {
	secretmanagerpb.UnimplementedSecretManagerServiceServer

	mu      sync.Mutex
	secrets map[string]*secret // full secret name → secret
}

type secret struct {
	pb       *secretmanagerpb.Secret
	versions []*version // index n-1 is version n
}

type version struct {
	pb   *secretmanagerpb.SecretVersion
	data []byte
}

// New returns an empty fake.
func New() *Server { return &Server{secrets: map[string]*secret{}} }

var (
	projectName = regexp.MustCompile(`^projects/[^/]+$`)
	secretID    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	secretName  = regexp.MustCompile(`^projects/[^/]+/secrets/[A-Za-z0-9_-]{1,255}$`)
	versionName = regexp.MustCompile(`^(projects/[^/]+/secrets/[A-Za-z0-9_-]{1,255})/versions/([^/]+)$`)
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CreateSecret implements the service.
func (s *Server) CreateSecret(_ context.Context, r *secretmanagerpb.CreateSecretRequest) (*secretmanagerpb.Secret, error) {
	if !projectName.MatchString(r.GetParent()) || !secretID.MatchString(r.GetSecretId()) {
		return nil, status.Errorf(codes.InvalidArgument, "bad parent %q or secret id %q", r.GetParent(), r.GetSecretId())
	}
	if r.GetSecret().GetReplication() == nil {
		return nil, status.Error(codes.InvalidArgument, "replication is required")
	}
	name := r.GetParent() + "/secrets/" + r.GetSecretId()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.secrets[name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Secret [%s] already exists.", name)
	}
	pb := &secretmanagerpb.Secret{Name: name, Replication: r.GetSecret().GetReplication(), Labels: r.GetSecret().GetLabels(), CreateTime: timestamppb.Now()}
	s.secrets[name] = &secret{pb: pb}
	return pb, nil
}

// AddSecretVersion implements the service.
func (s *Server) AddSecretVersion(_ context.Context, r *secretmanagerpb.AddSecretVersionRequest) (*secretmanagerpb.SecretVersion, error) {
	if !secretName.MatchString(r.GetParent()) {
		return nil, status.Errorf(codes.InvalidArgument, "bad parent %q", r.GetParent())
	}
	data := r.GetPayload().GetData()
	if c := r.GetPayload().DataCrc32C; c != nil && *c != int64(crc32.Checksum(data, crcTable)) {
		return nil, status.Error(codes.InvalidArgument, "Checksum mismatch")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.secrets[r.GetParent()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found or has no versions.", r.GetParent())
	}
	n := len(sec.versions) + 1
	pb := &secretmanagerpb.SecretVersion{Name: r.GetParent() + "/versions/" + strconv.Itoa(n), State: secretmanagerpb.SecretVersion_ENABLED, CreateTime: timestamppb.Now()}
	sec.versions = append(sec.versions, &version{pb: pb, data: append([]byte(nil), data...)})
	return pb, nil
}

// lookup finds a version by name ("latest" = the newest enabled one).
func (s *Server) lookup(name string) (*version, error) {
	m := versionName.FindStringSubmatch(name)
	if m == nil {
		return nil, status.Errorf(codes.InvalidArgument, "bad version name %q", name)
	}
	sec, ok := s.secrets[m[1]]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found or has no versions.", m[1])
	}
	if m[2] == "latest" {
		for i := len(sec.versions) - 1; i >= 0; i-- {
			if sec.versions[i].pb.State == secretmanagerpb.SecretVersion_ENABLED {
				return sec.versions[i], nil
			}
		}
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found or has no versions.", m[1])
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 1 || strconv.Itoa(n) != m[2] {
		return nil, status.Errorf(codes.InvalidArgument, "bad version %q", m[2])
	}
	if n > len(sec.versions) {
		return nil, status.Errorf(codes.NotFound, "Secret Version [%s] not found.", name)
	}
	return sec.versions[n-1], nil
}

// AccessSecretVersion implements the service.
func (s *Server) AccessSecretVersion(_ context.Context, r *secretmanagerpb.AccessSecretVersionRequest) (*secretmanagerpb.AccessSecretVersionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lookup(r.GetName())
	if err != nil {
		return nil, err
	}
	if v.pb.State != secretmanagerpb.SecretVersion_ENABLED {
		return nil, status.Errorf(codes.FailedPrecondition, "Secret Version [%s] is in %s state.", v.pb.Name, v.pb.State)
	}
	crc := int64(crc32.Checksum(v.data, crcTable))
	return &secretmanagerpb.AccessSecretVersionResponse{Name: v.pb.Name,
		Payload: &secretmanagerpb.SecretPayload{Data: append([]byte(nil), v.data...), DataCrc32C: &crc}}, nil
}

// DestroySecretVersion implements the service (the data is dropped).
func (s *Server) DestroySecretVersion(_ context.Context, r *secretmanagerpb.DestroySecretVersionRequest) (*secretmanagerpb.SecretVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lookup(r.GetName())
	if err != nil {
		return nil, err
	}
	if v.pb.State == secretmanagerpb.SecretVersion_DESTROYED {
		return nil, status.Errorf(codes.FailedPrecondition, "Secret Version [%s] is already destroyed.", v.pb.Name)
	}
	v.pb.State, v.pb.DestroyTime, v.data = secretmanagerpb.SecretVersion_DESTROYED, timestamppb.Now(), nil
	return v.pb, nil
}

// ListSecretVersions implements the service: every version, newest first,
// in pages of PageSize (default 25), with the state filters "state:ENABLED"
// etc. honoured.
func (s *Server) ListSecretVersions(_ context.Context, r *secretmanagerpb.ListSecretVersionsRequest) (*secretmanagerpb.ListSecretVersionsResponse, error) {
	if !secretName.MatchString(r.GetParent()) {
		return nil, status.Errorf(codes.InvalidArgument, "bad parent %q", r.GetParent())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.secrets[r.GetParent()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Secret [%s] not found.", r.GetParent())
	}
	want := ""
	if f := r.GetFilter(); f != "" {
		st, ok := strings.CutPrefix(f, "state:")
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unsupported filter %q", f)
		}
		want = st
	}
	var all []*secretmanagerpb.SecretVersion
	for i := len(sec.versions) - 1; i >= 0; i-- { // newest first
		if v := sec.versions[i]; want == "" || v.pb.State.String() == want {
			all = append(all, v.pb)
		}
	}
	start := 0
	if t := r.GetPageToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(all) {
			return nil, status.Errorf(codes.InvalidArgument, "bad page token %q", t)
		}
		start = n
	}
	size := int(r.GetPageSize())
	if size <= 0 {
		size = 25
	}
	end := min(start+size, len(all))
	out := &secretmanagerpb.ListSecretVersionsResponse{Versions: all[start:end], TotalSize: int32(len(all))}
	if end < len(all) {
		out.NextPageToken = strconv.Itoa(end)
	}
	return out, nil
}

// Start serves s on a loopback port and returns a client of the official
// library connected to it (no authentication, plain gRPC) and a stop
// function that closes both.
func Start(ctx context.Context, s *Server) (*secretmanager.Client, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	gs := grpc.NewServer()
	secretmanagerpb.RegisterSecretManagerServiceServer(gs, s)
	go func() { _ = gs.Serve(lis) }()
	c, err := secretmanager.NewClient(ctx, option.WithEndpoint(lis.Addr().String()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		gs.Stop()
		return nil, nil, fmt.Errorf("smfake: client: %w", err)
	}
	return c, func() { _ = c.Close(); gs.Stop() }, nil
}
