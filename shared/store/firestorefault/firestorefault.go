// Package firestorefault serves a Firestore whose document reads
// (BatchGetDocuments), commits and queries answer one injected error: the
// server the Firestore drivers' error-mapping tests (store, credentials)
// run against, so each test checks that its driver carries the gRPC code
// Firestore answered (googleerr.FromGRPC) instead of a generic error.
package firestorefault

import (
	"context"
	"net"
	"sync"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
)

// Server is a Firestore gRPC server that answers every document read,
// commit and query with the error last given to Fail (nil: an empty
// answer). Other methods answer Unimplemented.
type Server struct {
	firestorepb.UnimplementedFirestoreServer
	mu  sync.Mutex
	err error
}

// Start serves a Server on a loopback port until the test ends and points
// FIRESTORE_EMULATOR_HOST at it (t.Setenv: not for parallel tests), so a
// Firestore client the test then opens talks to it.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	gs := grpc.NewServer()
	firestorepb.RegisterFirestoreServer(gs, s)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	t.Setenv("FIRESTORE_EMULATOR_HOST", lis.Addr().String())
	return s
}

// Fail makes every later read, commit and query answer err (a gRPC status
// error, e.g. status.Error(codes.PermissionDenied, "injected")).
func (s *Server) Fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *Server) current() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// BatchGetDocuments answers the injected error.
func (s *Server) BatchGetDocuments(*firestorepb.BatchGetDocumentsRequest, firestorepb.Firestore_BatchGetDocumentsServer) error {
	return s.current()
}

// Commit answers the injected error.
func (s *Server) Commit(context.Context, *firestorepb.CommitRequest) (*firestorepb.CommitResponse, error) {
	if err := s.current(); err != nil {
		return nil, err
	}
	return &firestorepb.CommitResponse{}, nil
}

// RunQuery answers the injected error.
func (s *Server) RunQuery(*firestorepb.RunQueryRequest, firestorepb.Firestore_RunQueryServer) error {
	return s.current()
}
