package toolspec

// Subscription is the configuration of kind subscription: a bounded drain
// of a Pub/Sub subscription or of a Kafka topic (a consumer group's
// committed offsets), and the later ack or nack of what it left pending
// (noetl-tools SubscriptionConfig). The NATS source is not available here.
// subscription is required for pubsub, topic and group for kafka (the
// validator checks the pair that the source needs).
type Subscription struct {
	Source       string `json:"source,omitempty" required:"source" enum:"pubsub,google_pubsub,gcp_pubsub,kafka" doc:"Where messages come from: pubsub (google_pubsub and gcp_pubsub are the same) or kafka; the NATS source is not available in this engine."`
	Operation    string `json:"operation,omitempty" alias:"action" enum:"poll,drain,fetch,ack,nack,nak" default:"poll" doc:"What to do: poll (drain and fetch are the same) or ack / nack (nak) the ack_ids of an earlier manual or defer poll."`
	Auth         any    `json:"auth,omitempty" alias:"credential" doc:"pubsub: a pubsub credential (a name, or a mapping {endpoint, project, token}); without it the process's client (PUBSUB_EMULATOR_HOST or Application Default Credentials). kafka: a kafka credential {brokers}."`
	Endpoint     string `json:"endpoint,omitempty" doc:"An emulator's host:port (or URL), when the credential names none."`
	Subscription string `json:"subscription,omitempty" doc:"pubsub (required): projects/<project>/subscriptions/<name>, or <name> in the credential's project (or the engine's)."`
	Brokers      any    `json:"brokers,omitempty" doc:"kafka: the brokers, host:port comma-separated or a list, when the credential names none (plaintext brokers)."`
	Topic        string `json:"topic,omitempty" doc:"kafka (required): the topic drained (every partition)."`
	Group        string `json:"group,omitempty" doc:"kafka (required): the consumer group whose committed offsets the drain starts from and advances (a group without offsets starts at the earliest)."`
	Batch        any    `json:"batch,omitempty" default:"100" doc:"poll: the most messages fetched (an integer, 1 to 1000)."`
	TimeoutMS    any    `json:"timeout_ms,omitempty" default:"1000" doc:"poll: the longest wait in milliseconds (an integer, at most 5000; capped by the task's timeout)."`
	Ack          any    `json:"ack,omitempty" enum:"on_success,auto,manual,defer,deferred,none,peek,true,false" default:"on_success" doc:"poll: on_success or auto (or true) acks within the drain (kafka: commits the group's offsets past the messages returned); manual or defer (or false) leaves the messages pending and returns their ack_ids; none (peek) leaves them pending without ids."`
	AckIDs       any    `json:"ack_ids,omitempty" doc:"ack, nack: the list of ack ids (strings) to dispose (kafka: topic:partition:offset; an ack commits past the highest offset of each partition, a nack commits nothing)."`
	NackDelayMS  any    `json:"nack_delay_ms,omitempty" default:"0" doc:"nack: redeliver after this delay in milliseconds (Pub/Sub counts whole seconds, at most 600 s)."`
}

// Kind implements Spec.
func (Subscription) Kind() string { return "subscription" }
