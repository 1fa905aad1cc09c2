// Package kafkasrc is a bounded reader of a Kafka topic for a consumer
// group, as NoETL's Kafka source reads one (the Rust tools' kafka crate
// consumer with group offset storage): it does not join the group; it
// reads the group's committed offsets, fetches every partition of the
// topic from there (the earliest offset where the group never committed)
// up to where each partition ended when the poll began, and commits past
// the messages handled. Delivery is at least once: what is not committed
// comes again with the next poll. Every connection goes through the egress
// policy (franz-go's dialer). The `subscription` task kind (a drain in a
// step) and registered `kind: Subscription` resources (an execution per
// message) use it.
package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/noetl/gcpengine/shared/egress"
)

// RequestTimeout bounds the metadata, offset and commit requests of a
// poll (the fetching itself is bounded by the poll's wait).
const RequestTimeout = 10 * time.Second

// Source is one topic read for one consumer group.
type Source struct {
	Brokers []string
	Topic   string
	Group   string
	// Egress is the network policy every connection goes through (nil:
	// none, tests).
	Egress *egress.Policy
}

// Record is one message read.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// Headers are the record's headers in order.
	Headers   []Header
	Timestamp time.Time
}

// Header is one record header.
type Header struct{ Key, Value string }

// ID is the record's id and ack id: topic:partition:offset (NoETL's).
func (r Record) ID() string { return ID(r.Topic, r.Partition, r.Offset) }

// ID formats topic:partition:offset.
func ID(topic string, partition int32, offset int64) string {
	return topic + ":" + strconv.FormatInt(int64(partition), 10) + ":" + strconv.FormatInt(offset, 10)
}

// ParseID reads an id of this source's topic.
func (s Source) ParseID(id string) (int32, int64, error) {
	i := strings.LastIndexByte(id, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(id[:i], ':')
	}
	if j <= 0 || id[:j] != s.Topic {
		return 0, 0, fmt.Errorf("ack id %q is not %s:<partition>:<offset>", id, s.Topic)
	}
	p, err1 := strconv.ParseInt(id[j+1:i], 10, 32)
	o, err2 := strconv.ParseInt(id[i+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return 0, 0, fmt.Errorf("ack id %q is not %s:<partition>:<offset>", id, s.Topic)
	}
	return int32(p), o, nil
}

// client opens a client with opts.
func (s Source) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(s.Brokers...), kgo.RequestRetries(2), kgo.RetryTimeout(RequestTimeout)}
	if p := s.Egress; p != nil {
		base = append(base, kgo.Dialer(p.DialContext))
	}
	return kgo.NewClient(append(base, opts...)...)
}

type window struct{ start, end int64 }

// committed reads the group's committed offsets (none for a group that
// never committed: some brokers answer GROUP_ID_NOT_FOUND for it).
func (s Source) committed(ctx context.Context, adm *kadm.Client) (kadm.OffsetResponses, error) {
	offs, err := adm.FetchOffsets(ctx, s.Group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.OffsetResponses{}, nil
	}
	return offs, err
}

// windows reads the topic's partitions with the group's position in each.
func (s Source) windows(ctx context.Context, adm *kadm.Client) (map[int32]window, error) {
	ends, err := adm.ListEndOffsets(ctx, s.Topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, s.Topic)
	if err != nil {
		return nil, err
	}
	committed, err := s.committed(ctx, adm)
	if err != nil {
		return nil, err
	}
	out := map[int32]window{}
	ends.Each(func(o kadm.ListedOffset) {
		w := window{end: o.Offset}
		if st, ok := starts.Lookup(s.Topic, o.Partition); ok && st.Err == nil {
			w.start = st.Offset
		}
		if c, ok := committed.Lookup(s.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			w.start = max(c.At, w.start)
		}
		out[o.Partition] = w
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", s.Topic)
	}
	return out, nil
}

// Poll reads up to batch records, waiting at most wait; it returns as soon
// as every partition was read up to where it ended when the poll began.
// Each partition's records are a prefix of what it holds past the group's
// offset (a batch cut never skips one). Nothing is committed.
func (s Source) Poll(ctx context.Context, batch int, wait time.Duration) ([]Record, error) {
	deadline := time.Now().Add(wait)
	admCl, err := s.client()
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	mctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	wins, err := s.windows(mctx, kadm.NewClient(admCl))
	cancel()
	if err != nil {
		return nil, err
	}
	assign := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, w := range wins {
		if w.start < w.end {
			assign[p] = kgo.NewOffset().At(w.start)
			next[p] = w.start
		}
	}
	out := []Record{}
	if len(assign) == 0 {
		return out, nil
	}
	cl, err := s.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.Topic: assign}),
		kgo.FetchMaxWait(min(max(wait, 100*time.Millisecond), 5*time.Second)))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	stopped := map[int32]bool{}
	done := func() bool {
		for p := range assign {
			if next[p] < wins[p].end {
				return false
			}
		}
		return true
	}
	for len(out) < batch && !done() {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, left)
		fetches := cl.PollRecords(pctx, batch-len(out))
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, e error) {
			if !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) && ferr == nil {
				ferr = e
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if stopped[r.Partition] || r.Offset >= wins[r.Partition].end || r.Offset != next[r.Partition] {
				return // past the poll's window, or out of order: left for the next poll
			}
			if len(out) >= batch {
				stopped[r.Partition] = true
				return
			}
			rec := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: string(h.Value)})
			}
			out = append(out, rec)
			next[r.Partition] = r.Offset + 1
		})
	}
	return out, nil
}

// Commit advances the group's committed offsets to next (partition →
// offset past the last message handled), never moving one back (a late
// ack of older messages changes nothing).
func (s Source) Commit(ctx context.Context, next map[int32]int64) error {
	if len(next) == 0 {
		return nil
	}
	cl, err := s.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	committed, err := s.committed(cctx, adm)
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
		if c, ok := committed.Lookup(s.Topic, p); ok && c.Err == nil && c.At >= next[p] {
			continue
		}
		offs.Add(kadm.Offset{Topic: s.Topic, Partition: p, At: next[p], LeaderEpoch: -1})
	}
	if len(offs) == 0 {
		return nil
	}
	resp, err := adm.CommitOffsets(cctx, s.Group, offs)
	if err != nil {
		return err
	}
	return resp.Error()
}

// Past returns, per partition, the offset past the longest run of handled
// records from the start of what a poll returned (records in poll order;
// handled reports each record's fate): what Commit may advance to without
// skipping an unhandled record.
func Past(records []Record, handled func(i int) bool) map[int32]int64 {
	out := map[int32]int64{}
	blocked := map[int32]bool{}
	for i, r := range records {
		if blocked[r.Partition] {
			continue
		}
		if !handled(i) {
			blocked[r.Partition] = true
			continue
		}
		out[r.Partition] = r.Offset + 1
	}
	return out
}
