package subscription

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/tools/internal/conf"
	"github.com/noetl/gcpengine/shared/tools/internal/creds"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// The Kafka source (NoETL's subscription tool, source kafka: a bounded
// poll of a topic for a consumer group, acked by committing the group's
// offsets). As NoETL's (the Rust tool's kafka crate consumer with group
// offset storage), the drain does not join the group: it reads the
// group's committed offsets, fetches every partition of the topic from
// there (the earliest offset for a partition the group never committed),
// and commits past the messages it returns. Delivery is at least once: a
// message is redelivered by every drain until an ack commits past it.
// Unlike NoETL's, record headers are returned (headers, attributes), and
// the manual/defer modes return ack ids that operation ack commits.

// kafkaTimeout bounds the metadata, offset and commit requests of a
// drain (the fetching itself is bounded by timeout_ms).
const kafkaTimeout = 10 * time.Second

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
				return conf.Fail("forbidden_address", false, "subscription task: kafka broker %s: %v", b, err)
			}
		}
	}
	k := kafkaSource{brokers: brokers, topic: topic, group: group, egress: t.opts.Egress}
	switch op {
	case "poll", "drain", "fetch":
		return k.poll(ctx, cfg, timeoutS)
	case "ack", "nack", "nak":
		return k.dispose(ctx, op, cfg)
	}
	return conf.ConfigError("subscription task: operation %q is not supported (poll, ack, nack)", op)
}

// kafkaSource is one topic read for one consumer group.
type kafkaSource struct {
	brokers      []string
	topic, group string
	egress       *egress.Policy
}

// client opens a client with opts (every dial through the egress policy:
// the seeds and the brokers the cluster's metadata names).
func (k kafkaSource) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(k.brokers...), kgo.RequestRetries(2), kgo.RetryTimeout(kafkaTimeout)}
	if p := k.egress; p != nil {
		base = append(base, kgo.Dialer(p.DialContext))
	}
	return kgo.NewClient(append(base, opts...)...)
}

// window is where a drain starts (the group's committed offset, else the
// partition's earliest) and the partition's end when the drain began.
type window struct{ start, end int64 }

// windows reads the topic's partitions with the group's position in each.
func (k kafkaSource) windows(ctx context.Context, adm *kadm.Client) (map[int32]window, error) {
	ends, err := adm.ListEndOffsets(ctx, k.topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, k.topic)
	if err != nil {
		return nil, err
	}
	committed, err := k.committed(ctx, adm)
	if err != nil {
		return nil, err
	}
	out := map[int32]window{}
	ends.Each(func(o kadm.ListedOffset) {
		w := window{end: o.Offset, start: 0}
		if s, ok := starts.Lookup(k.topic, o.Partition); ok && s.Err == nil {
			w.start = s.Offset
		}
		if c, ok := committed.Lookup(k.topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			w.start = max(c.At, w.start)
		}
		out[o.Partition] = w
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", k.topic)
	}
	return out, nil
}

// poll is the bounded drain: up to batch messages, at most timeout_ms;
// it ends as soon as every partition was read up to where it ended when
// the drain began.
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
	deadline := time.Now().Add(wait)

	admCl, err := k.client()
	if err != nil {
		return conf.ConfigError("subscription task: kafka client: %v", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	mctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	wins, err := k.windows(mctx, adm)
	cancel()
	if err != nil {
		return k.failure(ctx, "read offsets of", err)
	}
	assign := map[int32]kgo.Offset{}
	for p, w := range wins {
		if w.start < w.end {
			assign[p] = kgo.NewOffset().At(w.start)
		}
	}
	type taken struct {
		rec  *kgo.Record
		part int32
	}
	var got []taken
	next := map[int32]int64{} // the offset past the last message taken
	stopped := map[int32]bool{}
	if len(assign) > 0 {
		cl, err := k.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: assign}),
			kgo.FetchMaxWait(min(max(wait, 100*time.Millisecond), 5*time.Second)))
		if err != nil {
			return conf.ConfigError("subscription task: kafka client: %v", err)
		}
		defer cl.Close()
		done := func() bool {
			for p := range assign {
				if max(next[p], wins[p].start) < wins[p].end {
					return false
				}
			}
			return true
		}
		for len(got) < batch && !done() {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			pctx, cancel := context.WithTimeout(ctx, left)
			fetches := cl.PollRecords(pctx, batch-len(got))
			cancel()
			if ctx.Err() != nil {
				return k.failure(ctx, "poll", ctx.Err())
			}
			var ferr error
			fetches.EachError(func(_ string, _ int32, e error) {
				if !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) && ferr == nil {
					ferr = e
				}
			})
			if ferr != nil {
				return k.failure(ctx, "poll", ferr)
			}
			fetches.EachRecord(func(r *kgo.Record) {
				if stopped[r.Partition] || r.Offset >= wins[r.Partition].end {
					return // past the drain's window: left for the next drain
				}
				if len(got) >= batch {
					stopped[r.Partition] = true // keep each partition's messages a prefix
					return
				}
				got = append(got, taken{rec: r, part: r.Partition})
				next[r.Partition] = r.Offset + 1
			})
		}
	}
	msgs := make([]any, 0, len(got))
	ids := []any{}
	for _, g := range got {
		r := g.rec
		id := kafkaID(r.Topic, r.Partition, r.Offset)
		headers, attrs := map[string]any{}, map[string]any{}
		for _, h := range r.Headers {
			attrs[h.Key] = string(h.Value)
			headers[strings.ToLower(h.Key)] = string(h.Value)
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
	if (mode == ackOnSuccess || mode == ackAuto) && len(got) > 0 {
		if err := k.commit(ctx, adm, next); err != nil {
			return k.failure(ctx, "commit offsets of", err)
		}
		acked = true
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{
		"status": "success", "source": "kafka", "operation": "poll", "topic": k.topic, "group": k.group,
		"count": int64(len(msgs)), "messages": msgs, "acked": acked, "ack_mode": string(mode), "ack_ids": ids,
		"metrics": map[string]any{"noetl_subscription_messages_fetched_total": int64(len(msgs)), "source": "kafka"},
	}}
}

// kafkaID is a message's id and ack id: topic:partition:offset (NoETL's).
func kafkaID(topic string, partition int32, offset int64) string {
	return topic + ":" + strconv.FormatInt(int64(partition), 10) + ":" + strconv.FormatInt(offset, 10)
}

// parseKafkaID reads an ack id of this source's topic.
func (k kafkaSource) parseKafkaID(id string) (int32, int64, error) {
	i := strings.LastIndexByte(id, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(id[:i], ':')
	}
	if j <= 0 || id[:j] != k.topic {
		return 0, 0, fmt.Errorf("ack id %q is not %s:<partition>:<offset>", id, k.topic)
	}
	p, err1 := strconv.ParseInt(id[j+1:i], 10, 32)
	o, err2 := strconv.ParseInt(id[i+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return 0, 0, fmt.Errorf("ack id %q is not %s:<partition>:<offset>", id, k.topic)
	}
	return int32(p), o, nil
}

// committed reads the group's committed offsets (none for a group that
// never committed: some brokers answer GROUP_ID_NOT_FOUND for it).
func (k kafkaSource) committed(ctx context.Context, adm *kadm.Client) (kadm.OffsetResponses, error) {
	offs, err := adm.FetchOffsets(ctx, k.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.OffsetResponses{}, nil
	}
	return offs, err
}

// commit advances the group's committed offsets to next (partition →
// offset), never moving one back (a late ack of older messages changes
// nothing).
func (k kafkaSource) commit(ctx context.Context, adm *kadm.Client, next map[int32]int64) error {
	cctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	committed, err := k.committed(cctx, adm)
	if err != nil {
		return err
	}
	offs := kadm.Offsets{}
	parts := make([]int32, 0, len(next))
	for p := range next {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		if c, ok := committed.Lookup(k.topic, p); ok && c.Err == nil && c.At >= next[p] {
			continue
		}
		offs.Add(kadm.Offset{Topic: k.topic, Partition: p, At: next[p], LeaderEpoch: -1})
	}
	if len(offs) == 0 {
		return nil
	}
	resp, err := adm.CommitOffsets(cctx, k.group, offs)
	if err != nil {
		return err
	}
	return resp.Error()
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
		p, o, err := k.parseKafkaID(id)
		if err != nil {
			return conf.ConfigError("subscription task: %v", err)
		}
		next[p] = max(next[p], o+1)
	}
	if op == "ack" && len(next) > 0 {
		cl, err := k.client()
		if err != nil {
			return conf.ConfigError("subscription task: kafka client: %v", err)
		}
		defer cl.Close()
		if err := k.commit(ctx, kadm.NewClient(cl), next); err != nil {
			return k.failure(ctx, "commit offsets of", err)
		}
	}
	disposed := int64(len(ids))
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "source": "kafka", "operation": op,
		"topic": k.topic, "group": k.group, "requested": int64(len(ids)), "disposed": disposed}}
}

// failure classifies a Kafka error: a refused address is forbidden_address,
// an unknown topic not_found, authorization failures auth, the errors
// Kafka marks retriable (and unreachable brokers) retryable kind kafka.
func (k kafkaSource) failure(ctx context.Context, op string, err error) types.Outcome {
	where := fmt.Sprintf("%s topic %s (group %s)", op, k.topic, k.group)
	if egress.IsRefused(err) || strings.Contains(err.Error(), "refused by the network policy") {
		return conf.Fail("forbidden_address", false, "subscription task: %s: %v", where, err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return conf.Fail("canceled", true, "subscription task canceled during %s", where)
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return conf.Fail("not_found", false, "subscription task: %s: %v", where, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		return conf.Fail("auth", false, "subscription task: %s: %v", where, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return conf.Fail("kafka", ke.Retriable, "subscription task: %s: %v", where, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") {
		return conf.Fail("kafka", true, "subscription task: %s: %v", where, err)
	}
	return conf.Fail("kafka", false, "subscription task: %s: %v", where, err)
}
