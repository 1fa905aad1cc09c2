package subscribe

import (
	"context"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/kafkasrc"
)

// SourceKafka is the source name of a kafka subscription in workloads and
// spool items.
const SourceKafka = "kafka"

// sourceOf is a resource's source name (pubsub unless kafka).
func sourceOf(spec *dsl.Subscription) string {
	if spec.Source == SourceKafka {
		return SourceKafka
	}
	return SourcePubSub
}

// KafkaPuller is the Puller of a kafka subscription (batch dispatch,
// shared/kafkasrc): Pull reads up to max records of the topic from the
// group's committed offsets; Ack commits, in each partition, past the
// longest run of acked records from the start of the last pull (an
// unacked record holds back the ones after it: they come again, and a
// redelivered message starts nothing new — its execution id derives from
// the message id); Nack commits nothing. Delivery is at least once. One
// KafkaPuller serves one tick of one registration.
type KafkaPuller struct {
	Source kafkasrc.Source
	last   []kafkasrc.Record
}

// Pull implements Puller (subscription is ignored: the source names the
// topic and group).
func (k *KafkaPuller) Pull(ctx context.Context, _ string, max int, wait time.Duration) ([]Pulled, error) {
	recs, err := k.Source.Poll(ctx, max, wait)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "subscribe: poll kafka topic "+k.Source.Topic)
	}
	k.last = recs
	out := make([]Pulled, 0, len(recs))
	for _, r := range recs {
		attrs := map[string]string{}
		for _, h := range r.Headers {
			attrs[h.Key] = h.Value
		}
		id := r.ID()
		out = append(out, Pulled{AckID: id, Message: Message{ID: id, Data: r.Value, Attributes: attrs,
			PublishTime: r.Timestamp.UTC(), OrderingKey: string(r.Key), DeliveryAttempt: 0}})
	}
	return out, nil
}

// Ack implements Puller: commits past the acked prefix of each partition
// of the last pull.
func (k *KafkaPuller) Ack(ctx context.Context, _ string, ackIDs []string) error {
	acked := map[string]bool{}
	for _, id := range ackIDs {
		acked[id] = true
	}
	next := kafkasrc.Past(k.last, func(i int) bool { return acked[k.last[i].ID()] })
	if err := k.Source.Commit(ctx, next); err != nil {
		return errs.Wrap(errs.Unavailable, err, "subscribe: commit kafka offsets of "+k.Source.Topic)
	}
	return nil
}

// Nack implements Puller: nothing is committed, so the records come again.
func (k *KafkaPuller) Nack(context.Context, string, []string) error { return nil }

// kafkaPuller builds the puller of a kafka registration: the brokers are
// spec.brokers, else the kafka credential named by spec.auth (granted to
// the subscription's playbook path or to "subscription:<name>").
func (s *Service) kafkaPuller(ctx context.Context, reg *Registration) (*KafkaPuller, error) {
	spec := reg.Spec
	brokers := spec.Brokers
	if len(brokers) == 0 && spec.Auth != "" {
		if s.Credentials == nil {
			return nil, errs.New(errs.FailedPrecondition, "subscribe: %s: spec.auth names a credential but no credential store is configured", reg.Record.Name)
		}
		g := credentials.Grantee{Path: spec.Dispatch.Playbook, Creator: "subscription:" + reg.Record.Name}
		kc, err := credentials.Resolve(credentials.WithGrantee(ctx, g), s.Credentials, []any{map[string]any{"name": "kafka", "credential": spec.Auth}}, nil)
		if err != nil {
			return nil, errs.Wrap(errs.CodeOf(err), err, "subscribe: "+reg.Record.Name+": spec.auth")
		}
		entry, _ := kc["kafka"].(map[string]any)
		raw := entry["brokers"]
		if raw == nil {
			raw = entry["bootstrap_servers"]
		}
		b, err := credentials.KafkaBrokers(raw)
		if err != nil {
			return nil, errs.New(errs.InvalidArgument, "subscribe: %s: the kafka credential %s: %v", reg.Record.Name, spec.Auth, err)
		}
		brokers = b
	}
	if len(brokers) == 0 || strings.TrimSpace(spec.Topic) == "" {
		return nil, errs.New(errs.InvalidArgument, "subscribe: %s: a kafka source needs brokers and a topic", reg.Record.Name)
	}
	return &KafkaPuller{Source: kafkasrc.Source{Brokers: brokers, Topic: spec.Topic, Group: spec.Group, Egress: s.Egress}}, nil
}
