package replay

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
)

// PubSub is the Subscription on a Pub/Sub pull subscription (the emulator
// when PUBSUB_EMULATOR_HOST is set).
type PubSub struct {
	client *pubsub.Client
	name   string // projects/<project>/subscriptions/<id>
	// PullWait bounds one pull that finds nothing (0: 2 s).
	PullWait time.Duration
}

// OpenPubSub connects to the replay subscription id of project.
func OpenPubSub(ctx context.Context, project, id string) (*PubSub, error) {
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "replay: pubsub client")
	}
	return &PubSub{client: c, name: "projects/" + project + "/subscriptions/" + id}, nil
}

// Close closes the client.
func (p *PubSub) Close() error { return p.client.Close() }

// SeekTime implements Subscription.
func (p *PubSub) SeekTime(ctx context.Context, t time.Time) error {
	_, err := p.client.SubscriptionAdminClient.Seek(ctx, &pubsubpb.SeekRequest{Subscription: p.name,
		Target: &pubsubpb.SeekRequest_Time{Time: timestamppb.New(t)}})
	if err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "replay: seek "+p.name)
	}
	return nil
}

// Pull implements Subscription: one synchronous pull; a pull that waits
// PullWait without a message returns none.
func (p *PubSub) Pull(ctx context.Context, max int) ([]Message, error) {
	wait := p.PullWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r, err := p.client.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{Subscription: p.name, MaxMessages: int32(max)})
	if err != nil {
		if ctx.Err() == nil && (pctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
			return nil, nil
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "replay: pull "+p.name)
	}
	out := make([]Message, 0, len(r.ReceivedMessages))
	for _, m := range r.ReceivedMessages {
		out = append(out, Message{AckID: m.AckId, Data: m.Message.GetData(), Attributes: m.Message.GetAttributes(),
			PublishTime: m.Message.GetPublishTime().AsTime()})
	}
	return out, nil
}

// Ack implements Subscription.
func (p *PubSub) Ack(ctx context.Context, ackIDs []string) error {
	for len(ackIDs) > 0 {
		n := min(len(ackIDs), 1000)
		if err := p.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: p.name, AckIds: ackIDs[:n]}); err != nil {
			return errs.Wrap(errs.CodeOf(err), err, "replay: acknowledge "+p.name)
		}
		ackIDs = ackIDs[n:]
	}
	return nil
}
