// Package pubsubpull is the Pub/Sub driver of subscribe.Puller, batch
// dispatch's synchronous pull (the contract in shared/subscribe; its suite
// is shared/subscribe/subscribetest's PullerSuite).
package pubsubpull

import (
	"context"
	"fmt"
	"time"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/subscribe"
)

// Puller is the subscribe.Puller of a Pub/Sub subscription admin client.
type Puller struct {
	Client *pubsubapi.SubscriptionAdminClient
}

// Pull implements subscribe.Puller with a synchronous pull.
func (p Puller) Pull(ctx context.Context, subscription string, max int, wait time.Duration) ([]subscribe.Pulled, error) {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	resp, err := p.Client.Pull(pctx, &pubsubpb.PullRequest{Subscription: subscription, MaxMessages: int32(max)})
	if err != nil {
		if pctx.Err() != nil && ctx.Err() == nil || status.Code(err) == codes.DeadlineExceeded {
			return nil, nil // nothing arrived in time
		}
		return nil, fmt.Errorf("subscribe: pull %s: %w", subscription, err)
	}
	out := make([]subscribe.Pulled, 0, len(resp.ReceivedMessages))
	for _, rm := range resp.ReceivedMessages {
		m := rm.GetMessage()
		var pt time.Time
		if m.GetPublishTime() != nil {
			pt = m.GetPublishTime().AsTime().UTC()
		}
		out = append(out, subscribe.Pulled{AckID: rm.AckId, Message: subscribe.Message{ID: m.GetMessageId(), Data: m.GetData(), Attributes: m.GetAttributes(),
			PublishTime: pt, OrderingKey: m.GetOrderingKey(), DeliveryAttempt: int(rm.GetDeliveryAttempt())}})
	}
	return out, nil
}

// Ack implements subscribe.Puller.
func (p Puller) Ack(ctx context.Context, subscription string, ackIDs []string) error {
	if len(ackIDs) == 0 {
		return nil
	}
	return p.Client.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: subscription, AckIds: ackIDs})
}

// Nack implements subscribe.Puller (ack deadline 0).
func (p Puller) Nack(ctx context.Context, subscription string, ackIDs []string) error {
	if len(ackIDs) == 0 {
		return nil
	}
	return p.Client.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: subscription, AckIds: ackIDs, AckDeadlineSeconds: 0})
}
