package subscription

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/kafkasrc"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/tools/creds"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// The Kafka source (NoETL's subscription tool, source kafka: a bounded
// poll of a topic for a consumer group, acked by committing the group's
// offsets; shared/kafkasrc reads and commits). Delivery is at least once:
// a message is redelivered by every drain until an ack commits past it.
// Unlike NoETL's, record headers are returned (headers, attributes), and
// the manual/defer modes return ack ids that operation ack commits.

// kafkaExec runs one operation on a Kafka source.
func (t *Tool) kafkaExec(ctx context.Context, cfg toolspec.Subscription, op string, timeoutS float64) types.Outcome {
	fields := map[string]any{}
	if a := cfg.Auth; a != nil {
		f, err := creds.Resolve(ctx, t.opts.Credentials, a, "subscription task", credentials.KindKafka)
		if err != nil {
			return creds.Outcome(err)
		}
		fields = f
	}
	raw := cfg.Brokers
	if raw == nil {
		if v, ok := fields["brokers"]; ok {
			raw = v
		} else {
			raw = fields["bootstrap_servers"]
		}
	}
	if raw == nil {
		return conf.ConfigError("subscription task: a kafka source needs its brokers: auth (a kafka credential {brokers}) or brokers (host:port)")
	}
	brokers, err := credentials.KafkaBrokers(raw)
	if err != nil {
		return conf.ConfigError("subscription task: kafka %v", err)
	}
	topic, group := strings.TrimSpace(cfg.Topic), strings.TrimSpace(cfg.Group)
	if topic == "" || group == "" {
		return conf.ConfigError("subscription task: a kafka source needs topic and group")
	}
	if p := t.opts.Egress; p != nil {
		// Decide the seed brokers before anything dials them (a refused
		// seed would otherwise look like an unreachable cluster).
		for _, b := range brokers {
			h, ps, err := net.SplitHostPort(b)
			if err != nil {
				return conf.ConfigError("subscription task: kafka broker %q is not host:port", b)
			}
			port, _ := strconv.Atoi(ps)
			if _, err := p.Resolve(ctx, h, port); err != nil {
				return conf.Fail(types.ErrKindForbiddenAddress, false, "subscription task: kafka broker %s: %v", b, err)
			}
		}
	}
	k := kafkaSource{Source: kafkasrc.Source{Brokers: brokers, Topic: topic, Group: group, Egress: t.opts.Egress}}
	switch op {
	case "poll", "drain", "fetch":
		return k.poll(ctx, cfg, timeoutS)
	case "ack", "nack", "nak":
		return k.dispose(ctx, op, cfg)
	}
	return conf.ConfigError("subscription task: operation %q is not supported (poll, ack, nack)", op)
}

// kafkaSource is the topic and group a task reads (shared/kafkasrc).
type kafkaSource struct{ kafkasrc.Source }

// poll is the bounded drain: up to batch messages, at most timeout_ms; it
// ends as soon as every partition was read up to where it ended when the
// drain began.
func (k kafkaSource) poll(ctx context.Context, cfg toolspec.Subscription, timeoutS float64) types.Outcome {
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
	recs, err := k.Poll(ctx, batch, wait)
	if err != nil {
		return k.failure(ctx, "poll", err)
	}
	msgs := make([]any, 0, len(recs))
	ids := []any{}
	for _, r := range recs {
		id := r.ID()
		headers, attrs := map[string]any{}, map[string]any{}
		for _, h := range r.Headers {
			attrs[h.Key] = h.Value
			headers[strings.ToLower(h.Key)] = h.Value
		}
		var key any
		if len(r.Key) > 0 {
			key = string(r.Key)
		}
		entry := map[string]any{
			"id": id, "data": decodeData(r.Value), "headers": headers, "attributes": attrs,
			"metadata": map[string]any{"topic": r.Topic, "partition": int64(r.Partition), "offset": r.Offset, "key": key,
				"timestamp": r.Timestamp.UTC().Format(time.RFC3339Nano)},
		}
		if mode == ackManual || mode == ackDefer {
			entry["ack_id"] = id
			ids = append(ids, id)
		}
		msgs = append(msgs, entry)
	}
	acked := false
	if (mode == ackOnSuccess || mode == ackAuto) && len(recs) > 0 {
		if err := k.Commit(ctx, kafkasrc.Past(recs, func(int) bool { return true })); err != nil {
			return k.failure(ctx, "commit offsets of", err)
		}
		acked = true
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{
		"status": "success", "source": "kafka", "operation": "poll", "topic": k.Topic, "group": k.Group,
		"count": int64(len(msgs)), "messages": msgs, "acked": acked, "ack_mode": string(mode), "ack_ids": ids,
		"metrics": map[string]any{"noetl_subscription_messages_fetched_total": int64(len(msgs)), "source": "kafka"},
	}}
}

// dispose is operation ack (commit past the highest offset acked in each
// partition: Kafka acks are cumulative) or nack (commit nothing: the
// messages come again with the next drain).
func (k kafkaSource) dispose(ctx context.Context, op string, cfg toolspec.Subscription) types.Outcome {
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
	next := map[int32]int64{}
	for _, id := range ids {
		p, o, err := k.ParseID(id)
		if err != nil {
			return conf.ConfigError("subscription task: %v", err)
		}
		next[p] = max(next[p], o+1)
	}
	if op == "ack" {
		if err := k.Commit(ctx, next); err != nil {
			return k.failure(ctx, "commit offsets of", err)
		}
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "source": "kafka", "operation": op,
		"topic": k.Topic, "group": k.Group, "requested": int64(len(ids)), "disposed": int64(len(ids))}}
}

// failure classifies a Kafka error: a refused address is forbidden_address,
// an unknown topic not_found, authorization failures auth, the errors
// Kafka marks retriable (and unreachable brokers) retryable kind kafka.
func (k kafkaSource) failure(ctx context.Context, op string, err error) types.Outcome {
	where := fmt.Sprintf("%s topic %s (group %s)", op, k.Topic, k.Group)
	if egress.IsRefused(err) || strings.Contains(err.Error(), "refused by the network policy") {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "subscription task: %s: %v", where, err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return conf.Fail(types.ErrKindCanceled, true, "subscription task canceled during %s", where)
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return conf.Fail(types.ErrKindNotFound, false, "subscription task: %s: %v", where, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		return conf.Fail(types.ErrKindAuth, false, "subscription task: %s: %v", where, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return conf.Fail(types.ErrKindKafka, ke.Retriable, "subscription task: %s: %v", where, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") {
		return conf.Fail(types.ErrKindKafka, true, "subscription task: %s: %v", where, err)
	}
	return conf.Fail(types.ErrKindKafka, false, "subscription task: %s: %v", where, err)
}
