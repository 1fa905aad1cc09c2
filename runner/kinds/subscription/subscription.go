// Package subscription implements the `subscription` task kind: a bounded
// drain of a message subscription (NoETL's subscription tool, operation
// poll). It fetches up to `batch` messages, waiting at most `timeout_ms`,
// acknowledges them according to `ack`, and returns them as the task's
// result — it never holds a worker past its timeout.
//
// Sources: Apache Kafka (kafka.go: a consumer group's offsets over a
// topic, through franz-go), and Google Pub/Sub (synchronous Pull and Acknowledge over
// Pub/Sub's REST API, rest.go: no client library, so the runner links none), against the Pub/Sub emulator
// locally (a pubsub credential's endpoint, or PUBSUB_EMULATOR_HOST) and
// Pub/Sub in GCP (Application Default Credentials, or a credential's
// token).
//
// This kind is the one-shot drain a playbook step runs; `kind:
// Subscription` resources that start executions per message are a
// different mechanism (the subscriptions API).
package subscription

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/tools/creds"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Bounded-drain limits (NoETL's: batch ≤ 1000, timeout ≤ 5000 ms).
const (
	DefaultBatch     = 100
	MaxBatch         = 1000
	DefaultTimeoutMS = 1000
	MaxTimeoutMS     = 5000
)

// followUpWait bounds each pull after the first messages arrived.
const followUpWait = 250 * time.Millisecond

// Options configures the tool.
type Options struct {
	// Credentials resolves `auth` names (pubsub credentials).
	Credentials credentials.Store
	// Project completes a short subscription name (default: the
	// credential's project).
	Project string
	// Egress is the network policy of connections (the runner's); nil:
	// none (tests).
	Egress *egress.Policy
}

// Tool is the subscription task kind. It is safe for concurrent use; Close
// releases its clients.
type Tool struct {
	opts Options

	mu      sync.Mutex
	clients map[string]*restClient
	closed  bool
}

// New returns a subscription tool configured by opts.
func New(opts Options) *Tool {
	return &Tool{opts: opts, clients: map[string]*restClient{}}
}

// Close closes the cached clients.
func (t *Tool) Close() {
	t.mu.Lock()
	cs := t.clients
	t.clients = map[string]*restClient{}
	t.closed = true
	t.mu.Unlock()
	for _, c := range cs {
		c.hc.CloseIdleConnections()
	}
}

// ackMode is the `ack` policy.
type ackMode string

const (
	ackOnSuccess ackMode = "on_success" // ack within the drain (default)
	ackAuto      ackMode = "auto"       // the same
	ackManual    ackMode = "manual"     // leave pending, return ack_ids
	ackDefer     ackMode = "defer"      // the same; dispose later with operation ack/nack
	ackNone      ackMode = "none"       // leave pending, no ids
)

func parseAck(v any) (ackMode, error) {
	switch x := v.(type) {
	case nil:
		return ackOnSuccess, nil
	case bool:
		if x {
			return ackOnSuccess, nil
		}
		return ackManual, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "on_success", "":
			return ackOnSuccess, nil
		case "auto", "true":
			return ackAuto, nil
		case "manual", "false":
			return ackManual, nil
		case "defer", "deferred":
			return ackDefer, nil
		case "none", "peek":
			return ackNone, nil
		}
	}
	return "", fmt.Errorf("ack must be on_success, auto, manual, defer, none or a boolean, got %v", v)
}

// Exec runs one operation (tools.Adapt turns Exec into a tools.Tool).
// The configuration is decoded into toolspec.Subscription (aliases:
// action, credential). Keys read:
//
//	source        pubsub or kafka (required; the nats source is not
//	              available in this engine). kafka reads brokers (or auth: a
//	              kafka credential), topic and group instead of subscription
//	              (kafka.go); its ack ids are topic:partition:offset
//	operation     poll (default) | ack | nack
//	auth          a pubsub credential (name or mapping {endpoint, project,
//	              token}); without it the process's client (PUBSUB_EMULATOR_HOST
//	              or Application Default Credentials)
//	endpoint      emulator host:port (or URL) without a credential
//	subscription  projects/<p>/subscriptions/<s>, or <s> with the project
//	              of the credential or Options.Project
//	batch         most messages to fetch (default 100, at most 1000)
//	timeout_ms    longest wait (default 1000, at most 5000)
//	ack           on_success | auto (ack within the drain, default) | manual
//	              | defer (leave pending, return ack_ids) | none, or a bool
//	ack_ids       the handles to dispose (operation ack / nack)
//	nack_delay_ms nack: redeliver after this delay (default 0: at once;
//	              Pub/Sub counts in whole seconds, at most 600)
//
// poll result (NoETL's): {"status": "success", "source": "pubsub",
// "operation": "poll", "count": N, "messages": [{"id": messageId, "data":
// body (JSON-decoded when it is JSON, else text, base64 when binary),
// "headers": attributes with lower-case names, "attributes", "metadata":
// {"messageId", "publishTime", "deliveryAttempt", "ackId"}, "ack_id"}],
// "acked": bool, "ack_mode", "ack_ids": [...] (manual/defer), "metrics":
// {"noetl_subscription_messages_fetched_total": N, "source"}}. The drain
// pulls repeatedly until batch messages arrived, a pull came back empty,
// or timeout_ms passed; an empty drain is a success with count 0. ack/nack
// result: {"status", "source", "operation", "requested", "disposed"}.
// After the first messages arrive, each further pull waits at most 250 ms.
// Errors: bad keys kind "config"; a missing subscription kind
// "not_found"; permission problems kind "auth"; other Pub/Sub failures kind
// "pubsub" (retryable when the service says so: unavailable, deadline,
// resource exhausted, aborted, internal).
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.Subscription
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	src := cfg.Source
	op := "poll"
	if o := cfg.Operation; o != "" {
		op = strings.ToLower(strings.TrimSpace(o))
	}
	switch strings.ToLower(strings.TrimSpace(src)) {
	case "pubsub", "google_pubsub", "gcp_pubsub":
		for k, v := range map[string]bool{"brokers": cfg.Brokers != nil, "topic": cfg.Topic != "", "group": cfg.Group != ""} {
			if v {
				return conf.ConfigError("subscription task: %s is a key of kafka sources; a pubsub source reads subscription", k)
			}
		}
	case "kafka":
		return t.kafkaExec(ctx, cfg, op, timeoutS)
	case "":
		return conf.ConfigError("subscription task: `source` is required (pubsub, kafka)")
	default:
		return conf.ConfigError("subscription task: source %q is not available in this engine (pubsub, kafka); a NATS source needs its own subscription backend", src)
	}
	fields := map[string]any{}
	if a := cfg.Auth; a != nil {
		f, err := creds.Resolve(ctx, t.opts.Credentials, a, "subscription task", credentials.KindPubSub)
		if err != nil {
			return creds.Outcome(err)
		}
		fields = f
	}
	if ep := cfg.Endpoint; ep != "" && creds.String(fields, "endpoint") == "" {
		fields["endpoint"] = ep
	}
	sub, err := t.subscriptionName(cfg.Subscription, fields)
	if err != nil {
		return conf.ConfigError("subscription task: %v", err)
	}
	client, err := t.client(ctx, fields)
	if egress.IsRefused(err) {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "subscription task: %v", err)
	}
	if err != nil {
		return conf.ConfigError("subscription task: %v", err)
	}
	switch op {
	case "poll", "drain", "fetch":
		return t.poll(ctx, client, sub, cfg, timeoutS)
	case "ack", "nack", "nak":
		return t.dispose(ctx, client, sub, op, cfg)
	}
	return conf.ConfigError("subscription task: operation %q is not supported (poll, ack, nack)", op)
}

// subscriptionName completes the subscription's resource name.
func (t *Tool) subscriptionName(s string, fields map[string]any) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("`subscription` (projects/<project>/subscriptions/<name>) is required")
	}
	if strings.HasPrefix(s, "projects/") {
		parts := strings.Split(s, "/")
		if len(parts) != 4 || parts[1] == "" || parts[2] != "subscriptions" || parts[3] == "" {
			return "", fmt.Errorf("subscription %q is not projects/<project>/subscriptions/<name>", s)
		}
		return s, nil
	}
	if strings.Contains(s, "/") {
		return "", fmt.Errorf("subscription %q is not projects/<project>/subscriptions/<name>", s)
	}
	project := creds.String(fields, "project", "project_id")
	if project == "" {
		project = t.opts.Project
	}
	if project == "" {
		return "", fmt.Errorf("subscription %q has no project: write projects/<project>/subscriptions/%s", s, s)
	}
	return "projects/" + project + "/subscriptions/" + s, nil
}

// client returns the cached client for the connection fields.
func (t *Tool) client(ctx context.Context, fields map[string]any) (*restClient, error) {
	ep := creds.String(fields, "endpoint")
	tok := creds.String(fields, "token", "access_token")
	if ep == "" && tok == "" {
		// The process's client: the emulator of PUBSUB_EMULATOR_HOST, else
		// Application Default Credentials (the runner has neither: it
		// refuses to start with the variable, and its identity has no
		// project role).
		ep = strings.TrimSpace(os.Getenv("PUBSUB_EMULATOR_HOST"))
	}
	key := "default"
	c := &restClient{base: DefaultEndpoint}
	switch {
	case ep != "":
		host := ep
		if i := strings.Index(host, "://"); i >= 0 {
			host = host[i+3:]
		}
		host = strings.TrimRight(host, "/")
		if p := t.opts.Egress; p != nil {
			// The endpoint is decided before anything dials it.
			h, ps, err := net.SplitHostPort(host)
			if err != nil {
				return nil, fmt.Errorf("endpoint %q is not host:port: %v", host, err)
			}
			port, _ := strconv.Atoi(ps)
			if _, err := p.Resolve(ctx, h, port); err != nil {
				return nil, err
			}
		}
		key = "endpoint:" + host
		c.base = "http://" + host
	case tok != "":
		h := sha256.Sum256([]byte(tok))
		key = "token:" + hex.EncodeToString(h[:])
		c.tokens = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("subscription tool is closed")
	}
	if cached, ok := t.clients[key]; ok {
		return cached, nil
	}
	if key == "default" {
		ts, err := google.DefaultTokenSource(ctx, "https://www.googleapis.com/auth/pubsub")
		if err != nil {
			return nil, fmt.Errorf("pubsub credentials: %v", err)
		}
		c.tokens = ts
	}
	c.hc = &http.Client{Transport: &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second}}
	if p := t.opts.Egress; p != nil {
		c.hc = p.Client()
	}
	t.clients[key] = c
	return c, nil
}

// intKey reads v, the value of key (nil: def), as an integer clamped to
// [lo, hi].
func intKey(v any, key string, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	d, isNum := conf.Seconds(v)
	f := d.Seconds()
	if !isNum || f != float64(int(f)) {
		return 0, fmt.Errorf("%s must be an integer, got %v", key, v)
	}
	return min(max(int(f), lo), hi), nil
}

func (t *Tool) poll(ctx context.Context, c *restClient, sub string, cfg toolspec.Subscription, timeoutS float64) types.Outcome {
	batch, err := intKey(cfg.Batch, "batch", DefaultBatch, 1, MaxBatch)
	if err != nil {
		return conf.ConfigError("subscription task: %v", err)
	}
	waitMS, err := intKey(cfg.TimeoutMS, "timeout_ms", DefaultTimeoutMS, 0, MaxTimeoutMS)
	if err != nil {
		return conf.ConfigError("subscription task: %v", err)
	}
	mode, err := parseAck(cfg.Ack)
	if err != nil {
		return conf.ConfigError("subscription task: %v", err)
	}
	wait := time.Duration(waitMS) * time.Millisecond
	if timeoutS > 0 {
		wait = min(wait, time.Duration(timeoutS*float64(time.Second)))
	}
	deadline := time.Now().Add(wait)
	var received []receivedMessage
	for len(received) < batch {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if len(received) > 0 {
			// Messages arrived: wait only briefly for more (the drain ends
			// when the subscription is empty, not at timeout_ms).
			left = min(left, followUpWait)
		}
		pctx, cancel := context.WithTimeout(ctx, left)
		got, err := c.pull(pctx, sub, batch-len(received))
		cancel()
		if err != nil {
			if ctx.Err() == nil && (status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)) {
				break // nothing more arrived in time: a normal end of the drain
			}
			// Messages already pulled are not acked: Pub/Sub redelivers them.
			return failure(ctx, sub, "pull", err)
		}
		if len(got) == 0 {
			break
		}
		received = append(received, got...)
	}
	msgs := make([]any, 0, len(received))
	ids := make([]string, 0, len(received))
	for _, rm := range received {
		m := rm.Message
		attrs := map[string]any{}
		headers := map[string]any{}
		for k, v := range m.Attributes {
			attrs[k] = v
			headers[strings.ToLower(k)] = v
		}
		pub := ""
		if !m.PublishTime.IsZero() {
			pub = m.PublishTime.UTC().Format(time.RFC3339Nano)
		}
		entry := map[string]any{
			"id":         m.MessageID,
			"data":       decodeData(m.Data),
			"headers":    headers,
			"attributes": attrs,
			"metadata": map[string]any{"messageId": m.MessageID, "publishTime": pub,
				"deliveryAttempt": int64(rm.DeliveryAttempt), "ackId": rm.AckID, "orderingKey": m.OrderingKey},
		}
		if mode == ackManual || mode == ackDefer {
			entry["ack_id"] = rm.AckID
		}
		msgs = append(msgs, entry)
		ids = append(ids, rm.AckID)
	}
	acked := false
	if (mode == ackOnSuccess || mode == ackAuto) && len(ids) > 0 {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.acknowledge(actx, sub, ids)
		cancel()
		if err != nil {
			return failure(ctx, sub, "acknowledge", err)
		}
		acked = true
	}
	ackIDs := []any{}
	if mode == ackManual || mode == ackDefer {
		for _, id := range ids {
			ackIDs = append(ackIDs, id)
		}
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{
		"status": "success", "source": "pubsub", "operation": "poll", "subscription": sub,
		"count": int64(len(msgs)), "messages": msgs, "acked": acked, "ack_mode": string(mode), "ack_ids": ackIDs,
		"metrics": map[string]any{"noetl_subscription_messages_fetched_total": int64(len(msgs)), "source": "pubsub"},
	}}
}

// dispose acks (or nacks: ack deadline 0, redelivered at once) handles of
// an earlier manual/defer poll.
func (t *Tool) dispose(ctx context.Context, c *restClient, sub, op string, cfg toolspec.Subscription) types.Outcome {
	var ids []string
	switch x := cfg.AckIDs.(type) {
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok || s == "" {
				return conf.ConfigError("subscription task: ack_ids must be a list of strings")
			}
			ids = append(ids, s)
		}
	case nil:
	default:
		return conf.ConfigError("subscription task: ack_ids must be a list of strings")
	}
	if op == "nak" {
		op = "nack"
	}
	if len(ids) > 0 {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if op == "ack" {
			err = c.acknowledge(actx, sub, ids)
		} else {
			delayMS, derr := intKey(cfg.NackDelayMS, "nack_delay_ms", 0, 0, 600_000)
			if derr != nil {
				return conf.ConfigError("subscription task: %v", derr)
			}
			err = c.modifyAckDeadline(actx, sub, ids, (delayMS+999)/1000)
		}
		if err != nil {
			return failure(ctx, sub, op, err)
		}
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "source": "pubsub", "operation": op,
		"requested": int64(len(ids)), "disposed": int64(len(ids))}}
}

// decodeData is the JSON value of a body, else its text, else base64.
func decodeData(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	if v, err := jsonx.Decode(b); err == nil {
		return v
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return map[string]any{"encoding": "base64", "data": base64.StdEncoding.EncodeToString(b)}
}

// failure classifies a Pub/Sub error.
func failure(ctx context.Context, sub, op string, err error) types.Outcome {
	if egress.IsRefused(err) || strings.Contains(err.Error(), "refused by the network policy") {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "subscription task: %s of %s: %v", op, sub, err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return conf.Fail(types.ErrKindCanceled, true, "subscription task canceled during %s of %s", op, sub)
	}
	st, _ := status.FromError(err)
	msg := fmt.Sprintf("subscription task: %s %s: %s", op, sub, st.Message())
	switch st.Code() {
	case codes.NotFound:
		return conf.Fail(types.ErrKindNotFound, false, "%s", msg)
	case codes.PermissionDenied, codes.Unauthenticated:
		return conf.Fail(types.ErrKindAuth, false, "%s", msg)
	case codes.InvalidArgument, codes.FailedPrecondition:
		return conf.Fail(types.ErrKindPubSub, false, "%s", msg)
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Internal, codes.Unknown:
		return conf.Fail(types.ErrKindPubSub, true, "%s", msg)
	}
	return conf.Fail(types.ErrKindPubSub, false, "%s", msg)
}
