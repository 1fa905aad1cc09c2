package toolspec

// NATS is the configuration of kind nats: a NATS KV, object store or JetStream operation (noetl-tools NatsConfig).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type NATS struct {
	Operation    string `json:"operation,omitempty" required:"operation" enum:"kv_get,kv_put,kv_delete,kv_keys,kv_purge,object_get,object_put,object_delete,object_list,object_info,publish,js_publish,js_consume,js_get_msg,js_stream_info" doc:"The operation."`
	Bucket       any    `json:"bucket,omitempty" doc:"NATS bucket."`
	Key          any    `json:"key,omitempty" doc:"NATS key."`
	Value        any    `json:"value,omitempty" doc:"NATS value."`
	TTL          any    `json:"ttl,omitempty" doc:"NATS ttl."`
	Pattern      any    `json:"pattern,omitempty" doc:"NATS pattern."`
	Data         any    `json:"data,omitempty" doc:"NATS data."`
	Encoding     any    `json:"encoding,omitempty" doc:"NATS encoding."`
	Description  any    `json:"description,omitempty" doc:"NATS description."`
	Stream       any    `json:"stream,omitempty" doc:"NATS stream."`
	Subject      any    `json:"subject,omitempty" doc:"NATS subject."`
	Headers      any    `json:"headers,omitempty" doc:"NATS headers."`
	Seq          any    `json:"seq,omitempty" doc:"NATS seq."`
	Last         any    `json:"last,omitempty" doc:"NATS last."`
	Consumer     any    `json:"consumer,omitempty" doc:"NATS consumer."`
	Batch        any    `json:"batch,omitempty" doc:"NATS batch."`
	TimeoutMS    any    `json:"timeout_ms,omitempty" doc:"NATS timeout ms."`
	Ack          any    `json:"ack,omitempty" doc:"NATS ack."`
	URL          any    `json:"url,omitempty" doc:"NATS url."`
	User         any    `json:"user,omitempty" doc:"NATS user."`
	Password     any    `json:"password,omitempty" doc:"NATS password."`
	Token        any    `json:"token,omitempty" doc:"NATS token."`
	Auth         any    `json:"auth,omitempty" doc:"NATS auth."`
	NATSURL      any    `json:"nats_url,omitempty" doc:"NATS nats url."`
	NATSUser     any    `json:"nats_user,omitempty" doc:"NATS nats user."`
	NATSPassword any    `json:"nats_password,omitempty" doc:"NATS nats password."`
	NATSToken    any    `json:"nats_token,omitempty" doc:"NATS nats token."`
	TLSCA        any    `json:"tls_ca,omitempty" doc:"NATS tls ca."`
	TLSCert      any    `json:"tls_cert,omitempty" doc:"NATS tls cert."`
	TLSKey       any    `json:"tls_key,omitempty" doc:"NATS tls key."`
}

// Kind implements Spec.
func (NATS) Kind() string { return "nats" }
