package toolspec

// Subscription is the configuration of kind subscription: a pull of messages from Pub/Sub or NATS JetStream, and their acks (noetl-tools SubscriptionConfig).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type Subscription struct {
	Source       string `json:"source,omitempty" required:"source" enum:"pubsub,nats" doc:"Where messages come from: pubsub or nats (kafka needs brokers this stack lacks)."`
	Operation    string `json:"operation,omitempty" enum:"poll,ack,nack,nak,term" doc:"What to do: poll, ack, nack (nak) or term."`
	Auth         any    `json:"auth,omitempty" doc:"Subscription auth."`
	Batch        any    `json:"batch,omitempty" doc:"Subscription batch."`
	TimeoutMS    any    `json:"timeout_ms,omitempty" doc:"Subscription timeout ms."`
	Ack          any    `json:"ack,omitempty" doc:"Subscription ack."`
	AckIds       any    `json:"ack_ids,omitempty" doc:"Subscription ack ids."`
	NackDelayMS  any    `json:"nack_delay_ms,omitempty" doc:"Subscription nack delay ms."`
	Subscription any    `json:"subscription,omitempty" doc:"Subscription subscription."`
	Endpoint     any    `json:"endpoint,omitempty" doc:"Subscription endpoint."`
	URL          any    `json:"url,omitempty" doc:"Subscription url."`
	User         any    `json:"user,omitempty" doc:"Subscription user."`
	Password     any    `json:"password,omitempty" doc:"Subscription password."`
	Token        any    `json:"token,omitempty" doc:"Subscription token."`
	Stream       any    `json:"stream,omitempty" doc:"Subscription stream."`
	Consumer     any    `json:"consumer,omitempty" doc:"Subscription consumer."`
	Brokers      any    `json:"brokers,omitempty" doc:"Subscription brokers."`
	Topic        any    `json:"topic,omitempty" doc:"Subscription topic."`
	Group        any    `json:"group,omitempty" doc:"Subscription group."`
}

// Kind implements Spec.
func (Subscription) Kind() string { return "subscription" }
