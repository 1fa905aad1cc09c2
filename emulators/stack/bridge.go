package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/noetl/gcpengine/emulators/chaos"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
)

// MessagePublishedType is the type of the CloudEvent functions-framework-go
// makes of a Pub/Sub push body.
const MessagePublishedType = "google.cloud.pubsub.topic.v1.messagePublished"

// Attributes the bridge adds to a dead-lettered message; the first four are
// the ones Pub/Sub itself adds.
const (
	AttrDeadLetterDeliveryCount = "CloudPubSubDeadLetterSourceDeliveryCount"
	AttrDeadLetterSubscription  = "CloudPubSubDeadLetterSourceSubscription"
	AttrDeadLetterProject       = "CloudPubSubDeadLetterSourceSubscriptionProject"
	AttrDeadLetterPublishTime   = "CloudPubSubDeadLetterSourceTopicPublishTime"
	AttrDeadLetterReason        = "NoetlDeadLetterReason"
)

// BridgeOptions configures a Bridge.
type BridgeOptions struct {
	// Client is connected to Pub/Sub (the emulator).
	Client *pubsub.Client
	// Project, Subscription and Topic (IDs) name the source of the events.
	Project      string
	Subscription string
	Topic        string
	// Endpoint is the push endpoint the messages are POSTed to
	// (PushEndpoint).
	Endpoint string
	// DeadLetterTopic (an ID) receives messages whose delivery failed
	// MaxAttempts times. Empty disables dead-lettering: such messages keep
	// being retried every MaxBackoff.
	DeadLetterTopic string
	// Concurrency bounds the POSTs in flight (default 32).
	Concurrency int
	// MaxAttempts is the number of delivery attempts before a message is
	// dead-lettered (default 10).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the delay before re-delivering a
	// message whose delivery failed; it doubles per attempt (defaults 200ms
	// and 10s).
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one POST, as the ack deadline bounds a push (default
	// AckDeadline).
	Timeout time.Duration
	// ShutdownGrace is how long POSTs in flight may finish once Run's
	// context ends (default 5s).
	ShutdownGrace time.Duration
	// HTTPClient sends the POSTs; nil means a dedicated client.
	HTTPClient *http.Client
	// Filter is the subscription's filter (ParseFilter syntax): messages
	// that do not match are acked without delivery, as GCP does (the
	// emulator stores filters but does not apply them).
	Filter string
	// Chaos injects delivery faults (random delays that shuffle the order,
	// duplicate deliveries); nil injects none.
	Chaos *chaos.Injector
	// Logger receives delivery logs; nil discards them.
	Logger *slog.Logger
}

// BridgeStats counts what a Bridge did.
type BridgeStats struct {
	Delivered    int64 // messages acknowledged after a 2xx answer
	Failed       int64 // failed delivery attempts (non-2xx or transport error)
	DeadLettered int64 // messages published to the dead-letter topic
	Filtered     int64 // messages acked without delivery (filter)
	Duplicated   int64 // extra deliveries made by chaos
}

// Bridge turns a pull subscription into push delivery the way an explicit
// Pub/Sub push subscription does: it receives messages with the official
// client and POSTs each as a push request (a JSON push body, see
// newRequest) to Endpoint; the function's functions-framework turns it
// into a CloudEvent.
//
// Ordering: on a subscription with message ordering, the client hands over
// the messages of one ordering key one at a time, in order, and the next
// only after the previous one's delivery is settled; different keys proceed
// in parallel, at most Concurrency POSTs at a time.
//
// Failures: a 2xx answer acks the message. Anything else is a failed
// attempt: the message is re-delivered after a backoff (MinBackoff doubling
// up to MaxBackoff) while later messages of its ordering key wait, as a GCP
// push subscription does. The bridge re-delivers itself instead of Nack-ing
// because the client would go on handing over the key's later messages it
// already holds, breaking the order. After MaxAttempts failed attempts
// (counted per message ID, or taken from the message's DeliveryAttempt when
// the server tracks it) the message is published to DeadLetterTopic with
// its attributes plus the CloudPubSubDeadLetterSource* ones, acked, and
// logged at error level.
type Bridge struct {
	opts BridgeOptions
	log  *slog.Logger
	http *http.Client
	sem  chan struct{}
	dead *pubsub.Publisher

	postCtx context.Context // outlives Run's ctx by ShutdownGrace

	mu       sync.Mutex
	attempts map[string]int

	filter *Filter

	delivered, failed, deadLettered, filtered, duplicated atomic.Int64
}

// NewBridge returns a Bridge for opts, filling in defaults.
func NewBridge(opts BridgeOptions) (*Bridge, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultPushWorkers
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 10
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = AckDeadline
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 5 * time.Second
	}
	f, err := ParseFilter(opts.Filter)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", opts.Subscription, err)
	}
	b := &Bridge{opts: opts, http: opts.HTTPClient, sem: make(chan struct{}, opts.Concurrency), attempts: map[string]int{}, filter: f}
	if b.http == nil {
		b.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: opts.Concurrency, IdleConnTimeout: 90 * time.Second}}
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	b.log = lg.With("subscription", opts.Subscription, "endpoint", opts.Endpoint)
	if opts.DeadLetterTopic != "" {
		b.dead = opts.Client.Publisher(opts.DeadLetterTopic)
		b.dead.EnableMessageOrdering = true
	}
	return b, nil
}

// Stats returns the bridge's counters.
func (b *Bridge) Stats() BridgeStats {
	return BridgeStats{Delivered: b.delivered.Load(), Failed: b.failed.Load(), DeadLettered: b.deadLettered.Load(),
		Filtered: b.filtered.Load(), Duplicated: b.duplicated.Load()}
}

// Run receives and delivers until ctx ends, restarting the receive stream
// with backoff if the server breaks it. It returns nil once ctx has ended
// and the messages in hand are settled.
func (b *Bridge) Run(ctx context.Context) error {
	postCtx, cancelPosts := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPosts()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(b.opts.ShutdownGrace, cancelPosts) })
	defer stopGrace()
	b.postCtx = postCtx
	if b.dead != nil {
		defer b.dead.Stop()
	}

	sub := b.opts.Client.Subscriber(b.opts.Subscription)
	sub.ReceiveSettings.MaxOutstandingMessages = 1000
	sub.ReceiveSettings.NumGoroutines = 1
	wait := time.Second
	for {
		started := time.Now()
		err := sub.Receive(ctx, b.handle)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > time.Minute {
			wait = time.Second
		}
		b.log.Warn("bridge: receive stream ended; restarting", "error", errString(err), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// bump counts one more delivery attempt of m and returns its number.
func (b *Bridge) bump(m *pubsub.Message) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.attempts[m.ID] + 1
	if m.DeliveryAttempt != nil && *m.DeliveryAttempt > n {
		n = *m.DeliveryAttempt
	}
	b.attempts[m.ID] = n
	return n
}

func (b *Bridge) forget(id string) {
	b.mu.Lock()
	delete(b.attempts, id)
	b.mu.Unlock()
}

// backoff is the delay after failed attempt n (1-based).
func (b *Bridge) backoff(n int) time.Duration {
	d := b.opts.MinBackoff
	for i := 1; i < n && d < b.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, b.opts.MaxBackoff)
}

// handle delivers one message; it returns once the message is acked,
// dead-lettered, or (on shutdown) nacked.
func (b *Bridge) handle(ctx context.Context, m *pubsub.Message) {
	if !b.filter.Match(m.Attributes) {
		m.Ack()
		b.filtered.Add(1)
		return
	}
	if in := b.opts.Chaos; in != nil {
		if d := in.Delay(); d > 0 {
			// One line per delayed delivery: the soak counts them
			// (pubsub.delay).
			b.log.Info("bridge: chaos delayed delivery", "message_id", m.ID, "delay_ms", d.Milliseconds())
			select {
			case <-time.After(d):
			case <-ctx.Done():
				m.Nack()
				return
			}
		}
		if in.Duplicate() {
			// An extra delivery of the same message (Pub/Sub delivers at
			// least once); its answer is ignored.
			b.duplicated.Add(1)
			go func() {
				time.Sleep(in.Delay())
				code, _, err := b.post(m, 1)
				b.log.Info("bridge: chaos duplicate delivery", "message_id", m.ID, "status", code, "error", errString(err))
			}()
		}
	}
	for {
		select {
		case b.sem <- struct{}{}:
		case <-ctx.Done():
			m.Nack()
			return
		}
		attempt := b.bump(m)
		if b.dead != nil && attempt > b.opts.MaxAttempts {
			<-b.sem
			b.deadLetter(m, attempt-1, "delivery attempts exhausted")
			return
		}
		start := time.Now()
		code, excerpt, err := b.post(m, attempt)
		<-b.sem
		if err == nil && code/100 == 2 {
			m.Ack()
			b.forget(m.ID)
			b.delivered.Add(1)
			b.log.Debug("bridge: delivered", "message_id", m.ID, "ordering_key", m.OrderingKey, "attempt", attempt, "status", code, "duration_ms", time.Since(start).Milliseconds())
			return
		}
		b.failed.Add(1)
		reason := fmt.Sprintf("HTTP %d: %s", code, excerpt)
		if err != nil {
			reason = err.Error()
		}
		if b.dead != nil && attempt >= b.opts.MaxAttempts {
			b.deadLetter(m, attempt, reason)
			return
		}
		delay := b.backoff(attempt)
		b.log.Warn("bridge: delivery failed", "message_id", m.ID, "ordering_key", m.OrderingKey, "attempt", attempt,
			"status", code, "body", excerpt, "error", errString(err), "retry_in", delay.String())
		select {
		case <-ctx.Done():
			m.Nack()
			return
		case <-time.After(delay):
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pushMessage is the "message" of a Pub/Sub push body: the fields of the
// PubsubMessage, with messageId and publishTime also under their
// snake_case names, as Pub/Sub sends them.
type pushMessage struct {
	Data             []byte            `json:"data"`
	Attributes       map[string]string `json:"attributes"`
	MessageID        string            `json:"messageId"`
	MessageIDSnake   string            `json:"message_id"`
	PublishTime      string            `json:"publishTime"`
	PublishTimeSnake string            `json:"publish_time"`
	OrderingKey      string            `json:"orderingKey,omitempty"`
}

// pushBody is the JSON body of a push request: the message, the
// subscription and, on a subscription with a dead-letter policy, the
// delivery attempt.
type pushBody struct {
	Message         pushMessage `json:"message"`
	Subscription    string      `json:"subscription"`
	DeliveryAttempt int         `json:"deliveryAttempt,omitempty"`
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// PushEndpoint is the push endpoint of a subscription delivering topic to
// the function at functionURL: <functionURL>/projects/<project>/topics/<topic>,
// as terraform/pubsub.tf declares it (functions-framework-go takes the
// topic of the CloudEvent it makes from a raw push body from this path).
func PushEndpoint(functionURL, project, topic string) string {
	return strings.TrimSuffix(functionURL, "/") + "/projects/" + project + "/topics/" + topic
}

// newRequest builds the POST of one delivery attempt of m as a Pub/Sub
// push subscription sends it to a gen2 function's endpoint: Content-Type
// application/json, body {"message": {...}, "subscription":
// "projects/<p>/subscriptions/<s>", "deliveryAttempt": n}, no CloudEvent
// headers (functions-framework-go converts the body into a
// google.cloud.pubsub.topic.v1.messagePublished CloudEvent whose source
// names the topic of the endpoint's path). The trace context travels in
// the message's attributes, as in GCP.
func (b *Bridge) newRequest(ctx context.Context, m *pubsub.Message, attempt int) (*http.Request, error) {
	attrs := m.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	pt := formatTime(m.PublishTime)
	body, err := json.Marshal(pushBody{
		Message: pushMessage{
			Data: m.Data, Attributes: attrs, MessageID: m.ID, MessageIDSnake: m.ID,
			PublishTime: pt, PublishTimeSnake: pt, OrderingKey: m.OrderingKey,
		},
		Subscription:    "projects/" + b.opts.Project + "/subscriptions/" + b.opts.Subscription,
		DeliveryAttempt: attempt,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.opts.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "noetl-stack-bridge (Pub/Sub push emulation)")
	return req, nil
}

// post sends one delivery attempt and returns the status code and the start
// of the answer's body.
func (b *Bridge) post(m *pubsub.Message, attempt int) (int, string, error) {
	ctx, cancel := context.WithTimeout(b.postCtx, b.opts.Timeout)
	defer cancel()
	req, err := b.newRequest(ctx, m, attempt)
	if err != nil {
		return 0, "", err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(bytes.TrimSpace(buf)), nil
}

// deadLetter publishes m to the dead-letter topic and acks it; if publishing
// fails, m is nacked to be tried again.
func (b *Bridge) deadLetter(m *pubsub.Message, attempts int, reason string) {
	attrs := maps.Clone(m.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs[AttrDeadLetterDeliveryCount] = strconv.Itoa(attempts)
	attrs[AttrDeadLetterSubscription] = b.opts.Subscription
	attrs[AttrDeadLetterProject] = b.opts.Project
	attrs[AttrDeadLetterPublishTime] = m.PublishTime.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	attrs[AttrDeadLetterReason] = reason
	pctx, cancel := context.WithTimeout(b.postCtx, 30*time.Second)
	defer cancel()
	_, err := b.dead.Publish(pctx, &pubsub.Message{Data: m.Data, Attributes: attrs, OrderingKey: m.OrderingKey}).Get(pctx)
	if err != nil {
		if m.OrderingKey != "" {
			b.dead.ResumePublish(m.OrderingKey)
		}
		b.log.Error("bridge: dead-lettering failed; message nacked", "message_id", m.ID, "dead_letter_topic", b.opts.DeadLetterTopic, "error", err)
		// Do not spin: the emulator redelivers a nacked message at once.
		select {
		case <-b.postCtx.Done():
		case <-time.After(b.opts.MaxBackoff):
		}
		m.Nack()
		return
	}
	m.Ack()
	b.forget(m.ID)
	b.deadLettered.Add(1)
	b.log.Error("bridge: message dead-lettered", "message_id", m.ID, "ordering_key", m.OrderingKey,
		"attempts", attempts, "dead_letter_topic", b.opts.DeadLetterTopic, "reason", reason)
}

// errBridgeConfig is returned by validate for incomplete options.
var errBridgeConfig = errors.New("bridge: Client, Project, Subscription, Topic and Endpoint are required")

func (o BridgeOptions) validate() error {
	if o.Client == nil || o.Project == "" || o.Subscription == "" || o.Topic == "" || o.Endpoint == "" {
		return errBridgeConfig
	}
	return nil
}
