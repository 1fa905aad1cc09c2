package toolspec

// NATS is the configuration of kind nats: a JetStream key-value operation
// or a message publish on a NATS server (noetl-tools NatsConfig; NoETL's
// test_nats_kv.yaml fixture). Object-store and consumer operations are
// not available here.
type NATS struct {
	Operation string         `json:"operation,omitempty" alias:"action" required:"operation" enum:"kv_put,kv_get,kv_delete,kv_purge,kv_keys,publish,js_publish,put,get,delete,purge,keys" doc:"The operation: kv_put, kv_get, kv_delete, kv_purge, kv_keys (put, get, delete, purge, keys are the same), publish (core NATS) or js_publish (JetStream, acknowledged)."`
	Auth      any            `json:"auth,omitempty" alias:"credential" doc:"A nats credential: a name, or a mapping {nats_url | url, nats_user | user, nats_password | password, token}; when given, url, user, password and token are not read."`
	URL       string         `json:"url,omitempty" alias:"nats_url,servers" doc:"The server's URL (nats://host:port) without a credential; default: the engine's NATS server."`
	User      string         `json:"user,omitempty" alias:"nats_user,username" doc:"The user to connect as (without a credential)."`
	Password  string         `json:"password,omitempty" alias:"nats_password" doc:"The user's password (prefer auth: a credential name)."`
	Token     string         `json:"token,omitempty" alias:"nats_token" doc:"A token to connect with (wins over user and password; prefer auth)."`
	Bucket    string         `json:"bucket,omitempty" doc:"The key-value bucket (kv_*); kv_put creates it when missing."`
	Key       string         `json:"key,omitempty" doc:"The key (kv_put, kv_get, kv_delete, kv_purge)."`
	Value     Optional       `json:"value,omitempty" doc:"kv_put: the value (text stored as is, anything else as JSON; null is stored empty). publish, js_publish: the payload when data is not given."`
	TTL       any            `json:"ttl,omitempty" doc:"kv_put: the max age in seconds of the values of a bucket it creates (0: none)."`
	History   any            `json:"history,omitempty" default:"1" doc:"kv_put: the values kept per key (1 to 64) in a bucket it creates."`
	Pattern   string         `json:"pattern,omitempty" doc:"kv_keys: a glob (* and ?) the keys listed match."`
	Subject   string         `json:"subject,omitempty" doc:"publish, js_publish: the subject (no spaces)."`
	Data      any            `json:"data,omitempty" alias:"payload" doc:"publish, js_publish: the payload (text sent as is, anything else as JSON)."`
	Headers   map[string]any `json:"headers,omitempty" doc:"publish, js_publish: message headers (values stringified)."`
}

// Kind implements Spec.
func (NATS) Kind() string { return "nats" }
