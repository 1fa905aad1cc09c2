package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// SubscriptionSpec is one push subscription the stack provisions and
// bridges to a function.
type SubscriptionSpec struct {
	Name       string // subscription ID, e.g. "route"
	Topic      string // topic ID, e.g. "events"
	Path       string // function path on the functions server, e.g. "/route"
	DeadLetter string // dead-letter topic ID
	// Filter is the subscription's filter (Pub/Sub filter syntax); route
	// receives only the batches marked for it. No subscription uses
	// message ordering: every handler is correct under any order.
	Filter string
}

// Subscriptions are the push subscriptions of the stack, which deliver to
// route, materialize and dispatch (endpoint PushEndpoint(<functions
// URL>+Path, project, Topic)).
var Subscriptions = []SubscriptionSpec{
	{RouteSub, EventsTopic, "/route", EventsDeadTopic, RouteFilter},
	{MaterializeSub, EventsTopic, "/materialize", EventsDeadTopic, ""},
	{DispatchSub, CommandsTopic, "/dispatch", CommandsDeadTopic, ""},
}

// AckDeadline is the ack deadline of every subscription (and the push
// timeout of the bridge).
const AckDeadline = 60 * time.Second

func alreadyExists(err error) bool { return status.Code(err) == codes.AlreadyExists }

// NewPubSubClient connects the official client to the emulator at addr
// (host:port), without credentials.
func NewPubSubClient(ctx context.Context, project, addr string) (*pubsub.Client, error) {
	return pubsub.NewClient(ctx, project,
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithTelemetryDisabled())
}

// ProvisionPubSub creates the topics and subscriptions (idempotent).
//
// Subscriptions get their filter and a 60s ack deadline but no
// dead-letter policy: the bridge dead-letters (see Bridge), as a push
// subscription's dead-letter policy does in GCP. Pull subscriptions
// <dead topic>-inspect keep dead letters for inspection.
func ProvisionPubSub(ctx context.Context, c *pubsub.Client, project string) error {
	topic := func(id string) string { return "projects/" + project + "/topics/" + id }
	sub := func(id string) string { return "projects/" + project + "/subscriptions/" + id }
	for _, t := range []string{EventsTopic, CommandsTopic, EventsDeadTopic, CommandsDeadTopic} {
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic(t)}); err != nil && !alreadyExists(err) {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	want := []*pubsubpb.Subscription{}
	for _, s := range Subscriptions {
		want = append(want, &pubsubpb.Subscription{
			Name: sub(s.Name), Topic: topic(s.Topic),
			AckDeadlineSeconds: int32(AckDeadline / time.Second),
			Filter:             s.Filter,
		})
	}
	// The replay subscription keeps acknowledged messages for 7 days, as
	// in terraform/pubsub.tf: `noetl rebuild` seeks it to a time (the
	// emulator supports seek to a time and to snapshots on it).
	want = append(want, &pubsubpb.Subscription{Name: sub(ReplaySub), Topic: topic(EventsTopic),
		AckDeadlineSeconds: int32(AckDeadline / time.Second), RetainAckedMessages: true,
		MessageRetentionDuration: durationpb.New(7 * 24 * time.Hour)})
	for _, t := range []string{EventsDeadTopic, CommandsDeadTopic} {
		want = append(want, &pubsubpb.Subscription{Name: sub(t + "-inspect"), Topic: topic(t), AckDeadlineSeconds: int32(AckDeadline / time.Second)})
	}
	for _, w := range want {
		_, err := c.SubscriptionAdminClient.CreateSubscription(ctx, w)
		if err == nil {
			continue
		}
		if !alreadyExists(err) {
			return fmt.Errorf("create subscription %s: %w", w.Name, err)
		}
		got, err := c.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: w.Name})
		if err != nil {
			return fmt.Errorf("get subscription %s: %w", w.Name, err)
		}
		if got.Topic != w.Topic || got.EnableMessageOrdering || got.Filter != w.Filter || got.RetainAckedMessages != w.RetainAckedMessages {
			return fmt.Errorf("subscription %s exists with topic %s, ordering %v, filter %q, retain acked %v; want %s, no ordering, filter %q, retain acked %v (restart the emulator: scripts/down && scripts/up)",
				w.Name, got.Topic, got.EnableMessageOrdering, got.Filter, got.RetainAckedMessages, w.Topic, w.Filter, w.RetainAckedMessages)
		}
	}
	return nil
}

// NewTasksClient connects the official Cloud Tasks client to the emulator at
// addr (host:port), without credentials.
func NewTasksClient(ctx context.Context, addr string) (*cloudtasks.Client, error) {
	return cloudtasks.NewClient(ctx,
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithTelemetryDisabled())
}

// QueueMaxBackoff is the stack's queues' largest backoff between two
// attempts (the functions get it as NOETL_TASKS_MAX_BACKOFF_S).
const QueueMaxBackoff = 2 * time.Second

// QueueSpec returns the desired configuration of queue id.
// QueueSpec is a queue of the stack: rate limits and the retry
// configuration of the deployed queues (maxAttempts: NOETL_TASKS_MAX_ATTEMPTS,
// which execute reads to recognise the last attempt).
func QueueSpec(project, location, id string, concurrency, maxAttempts int) *cloudtaskspb.Queue {
	return &cloudtaskspb.Queue{
		Name: "projects/" + project + "/locations/" + location + "/queues/" + id,
		RateLimits: &cloudtaskspb.RateLimits{
			MaxDispatchesPerSecond:  500,
			MaxConcurrentDispatches: int32(concurrency),
		},
		RetryConfig: &cloudtaskspb.RetryConfig{
			MaxAttempts:  int32(maxAttempts),
			MinBackoff:   durationpb.New(200 * time.Millisecond),
			MaxBackoff:   durationpb.New(QueueMaxBackoff),
			MaxDoublings: 16,
		},
	}
}

// ProvisionTasks creates (or updates to the desired configuration) the work
// and timers queues.
func ProvisionTasks(ctx context.Context, c *cloudtasks.Client, project, location string, concurrency, maxAttempts int) error {
	parent := "projects/" + project + "/locations/" + location
	for _, id := range []string{WorkQueue, TimersQueue} {
		q := QueueSpec(project, location, id, concurrency, maxAttempts)
		_, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: parent, Queue: q})
		if err == nil {
			continue
		}
		if !alreadyExists(err) {
			return fmt.Errorf("create queue %s: %w", q.Name, err)
		}
		_, err = c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: q,
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits", "retry_config"}}})
		if err != nil {
			return fmt.Errorf("update queue %s: %w", q.Name, err)
		}
	}
	return nil
}

// ProvisionBucket creates bucket in the GCS emulator at 127.0.0.1:port with
// the official client (idempotent).
func ProvisionBucket(ctx context.Context, project string, port int, bucket string) error {
	c, err := storage.NewClient(ctx,
		option.WithEndpoint("http://"+hostPort(port)+"/storage/v1/"),
		option.WithoutAuthentication())
	if err != nil {
		return err
	}
	defer c.Close()
	err = c.Bucket(bucket).Create(ctx, project, nil)
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Code == http.StatusConflict {
		return nil
	}
	return err
}
