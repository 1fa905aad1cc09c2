package pubsubbus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/errs/googleerr"
	"github.com/noetl/gcpengine/shared/types"
)

// TestPublishErrorCodes: every publish error carries the code the engine
// acts on — the server's gRPC status, the context's end, or the client's
// own refusals by what they mean.
func TestPublishErrorCodes(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want errs.Code
	}{
		{"NotFound (topic missing)", status.Error(codes.NotFound, "topic"), errs.NotFound},
		{"PermissionDenied", status.Error(codes.PermissionDenied, "iam"), errs.PermissionDenied},
		{"Unauthenticated", status.Error(codes.Unauthenticated, "token"), errs.PermissionDenied},
		{"InvalidArgument", status.Error(codes.InvalidArgument, "attrs"), errs.InvalidArgument},
		{"ResourceExhausted (quota)", status.Error(codes.ResourceExhausted, "quota"), errs.ResourceExhausted},
		{"Unavailable", status.Error(codes.Unavailable, "down"), errs.Unavailable},
		{"DeadlineExceeded", status.Error(codes.DeadlineExceeded, "slow"), errs.DeadlineExceeded},
		{"Internal", status.Error(codes.Internal, "bug"), errs.Internal},
		{"Aborted", status.Error(codes.Aborted, "contention"), errs.FailedPrecondition},
		{"Unimplemented", status.Error(codes.Unimplemented, "no"), errs.Unimplemented},
		{"context deadline", fmt.Errorf("publish: %w", context.DeadlineExceeded), errs.DeadlineExceeded},
		{"context canceled", context.Canceled, errs.Canceled},
		{"oversized message", pubsub.ErrOversizedMessage, errs.InvalidArgument},
		{"flow control (messages)", pubsub.ErrFlowControllerMaxOutstandingMessages, errs.ResourceExhausted},
		{"flow control (bytes)", pubsub.ErrFlowControllerMaxOutstandingBytes, errs.ResourceExhausted},
		{"stopped publisher", pubsub.ErrPublisherStopped, errs.Unavailable},
		{"unclassified", errors.New("?"), errs.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := publishError(c.err, "bus: publish")
			if got := errs.CodeOf(err); got != c.want || !errors.Is(err, c.err) {
				t.Fatalf("publishError(%v) = %v, code %s; want %s wrapping the cause", c.err, err, got, c.want)
			}
		})
	}
}

// TestPubSubErrorCodes: the same codes through the real client, from a
// Pub/Sub server (pstest) answering the publish with an error the client
// does not retry, and from a topic that does not exist.
func TestPubSubErrorCodes(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Open(ctx, "p", "events", "commands", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	batch := types.Batch{ID: "b1", ExecutionID: "e1", Events: []types.Event{types.NewEvent(types.EvStepDone, "e1", "execute", time.Now())}}

	err = p.PublishBatch(ctx, batch)
	if !errs.Is(err, errs.NotFound) || !errs.Permanent(err) {
		t.Fatalf("publish to a missing topic: %v (code %s), want NotFound", err, errs.CodeOf(err))
	}
	if _, err := p.client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/p/topics/commands"}); err != nil {
		t.Fatal(err)
	}
	srv.SetAutoPublishResponse(false)
	for _, c := range []codes.Code{codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition} {
		srv.AddPublishResponse(nil, status.Error(c, "injected"))
		err := p.PublishCommands(ctx, types.Command{ExecutionID: "e1", Step: "s"})
		if got, want := errs.CodeOf(err), googleerr.FromGRPC(c); got != want {
			t.Errorf("publish answered %s: %v, code %s, want %s", c, err, got, want)
		}
	}
}
