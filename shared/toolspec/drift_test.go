package toolspec

import (
	"strings"
	"testing"
)

// checkAccepts fails t when Check finds any problem in config (every key
// in it is one the kind's tool reads).
func checkAccepts(t *testing.T, kind string, config map[string]any) {
	t.Helper()
	for _, p := range Check(kind, config) {
		t.Errorf("%s: %v accepted by the tool but refused by its spec: %s", kind, config, p.Error())
	}
}

// checkRefuses fails t when Check finds no error (warnings do not count)
// about key in config (the kind's tool refuses or never reads it).
func checkRefuses(t *testing.T, kind string, config map[string]any, key string) {
	t.Helper()
	for _, p := range Check(kind, config) {
		if p.Key == key && !p.Warning {
			return
		}
	}
	t.Errorf("%s: %v: the spec accepts %s, which the tool refuses or never reads", kind, config, key)
}

// TestNATSSpecIsTheTool: the nats spec had drifted from the tool both
// ways. The tool reads history, action, credential, servers, username,
// nats_url, nats_token and payload, which the spec refused; the spec
// accepted the object-store and consumer operations (object_get,
// js_consume...) the tool refuses, and keys it never read (stream,
// consumer, batch, tls_ca...).
func TestNATSSpecIsTheTool(t *testing.T) {
	checkAccepts(t, "nats", map[string]any{"action": "put", "credential": "nats_local", "bucket": "b", "key": "k", "value": 1, "history": 5, "ttl": 60})
	checkAccepts(t, "nats", map[string]any{"operation": "publish", "servers": "nats://h:4222", "username": "u", "nats_password": "p", "subject": "s", "payload": "x"})
	checkAccepts(t, "nats", map[string]any{"operation": "js_publish", "nats_url": "nats://h:4222", "nats_token": "t", "subject": "s", "data": map[string]any{"a": 1}, "headers": map[string]any{"h": "v"}})
	for _, op := range []string{"object_get", "object_put", "js_consume", "js_get_msg", "js_stream_info"} {
		checkRefuses(t, "nats", map[string]any{"operation": op, "bucket": "b"}, "operation")
	}
	for _, k := range []string{"stream", "consumer", "batch", "seq", "last", "ack", "timeout_ms", "encoding", "description", "tls_ca", "tls_cert", "tls_key"} {
		checkRefuses(t, "nats", map[string]any{"operation": "kv_get", "bucket": "b", "key": "k", k: "x"}, k)
	}
	if p := Check("nats", map[string]any{"operation": "kv_get", "url": "nats://a", "nats_url": "nats://b"}); len(p) == 0 || !strings.Contains(p[0].Error(), "url") {
		t.Errorf("url and nats_url together: %v, want an error naming both", p)
	}
}

// TestSubscriptionSpecIsTheTool: the subscription spec accepted sources
// the tool refuses (nats) with their keys (url, user, password, token,
// stream, consumer; brokers, topic, group for Kafka) and the term
// operation, and refused what the tool reads: action, credential, the
// drain/fetch operations, the google_pubsub/gcp_pubsub sources; a task
// without subscription passed the validator and failed at run time.
func TestSubscriptionSpecIsTheTool(t *testing.T) {
	checkAccepts(t, "subscription", map[string]any{"source": "gcp_pubsub", "action": "drain", "credential": "pubsub_local", "subscription": "s", "batch": 10, "timeout_ms": 500, "ack": "peek"})
	checkAccepts(t, "subscription", map[string]any{"source": "google_pubsub", "operation": "nak", "endpoint": "localhost:8085", "subscription": "s", "ack_ids": []any{"a"}, "nack_delay_ms": 1000})
	checkAccepts(t, "subscription", map[string]any{"source": "pubsub", "operation": "fetch", "subscription": "s", "ack": false})
	checkRefuses(t, "subscription", map[string]any{"source": "nats", "subscription": "s"}, "source")
	checkRefuses(t, "subscription", map[string]any{"source": "pubsub", "operation": "term", "subscription": "s"}, "operation")
	checkRefuses(t, "subscription", map[string]any{"source": "pubsub", "subscription": "s", "ack": "sometimes"}, "ack")
	for _, k := range []string{"url", "user", "password", "token", "stream", "consumer"} {
		checkRefuses(t, "subscription", map[string]any{"source": "pubsub", "subscription": "s", k: "x"}, k)
	}
	// The Kafka source reads brokers, topic and group (which key a source
	// requires, and a kafka key on a pubsub task, the validator checks:
	// shared/dsl kindValues).
	checkAccepts(t, "subscription", map[string]any{"source": "kafka", "operation": "poll", "brokers": "b:9092", "topic": "t", "group": "g", "batch": 5, "ack": "on_success"})
	checkAccepts(t, "subscription", map[string]any{"source": "kafka", "auth": "kafka_e2e", "topic": "t", "group": "g", "operation": "ack", "ack_ids": []any{"t:0:1"}})
}

// TestTransferSpecIsTheTool: the transfer spec refused batch_size and
// the insert, truncate, overwrite and merge modes (read by the tool) and
// accepted any direction (the tool refuses one that is not
// <source>_to_<target> of its types).
func TestTransferSpecIsTheTool(t *testing.T) {
	for _, mode := range []string{"append", "insert", "replace", "truncate", "overwrite", "upsert", "merge"} {
		checkAccepts(t, "transfer", map[string]any{"source": map[string]any{"type": "http"}, "target": map[string]any{"type": "postgres"}, "batch_size": 10, "mode": mode, "direction": "http_to_postgres"})
	}
	checkRefuses(t, "transfer", map[string]any{"source": map[string]any{"type": "http"}, "target": map[string]any{"type": "postgres"}, "direction": "http_to_gcs"}, "direction")
	checkRefuses(t, "transfer", map[string]any{"source": map[string]any{"type": "http"}, "target": map[string]any{"type": "postgres"}, "mode": "delete"}, "mode")
	for s, c := range map[string]string{"HTTPS": "http", " postgresql": "postgres", "artifact": "result", "results": "result", "duckdb": "duckdb"} {
		if got, ok := TransferEndType(TransferSourceTypes, s); !ok || got != c {
			t.Errorf("source type %q = %q, %v; want %q", s, got, ok, c)
		}
	}
	if _, ok := TransferEndType(TransferTargetTypes, "http"); ok {
		t.Error("http is not a target type")
	}
}

// TestDuckDBSpecIsTheTool: the duckdb spec refused read_only and the
// path and db spellings of database, which the tool reads, and accepted
// auth and credentials silently though the tool never reads them (now a
// warning saying why; gcs_credential is refused by the tool and the
// validator: TestGCSCredentialRefused, TestDuckDBGCSCredentialNamesWhatItNeeds).
func TestDuckDBSpecIsTheTool(t *testing.T) {
	checkAccepts(t, "duckdb", map[string]any{"query": "SELECT 1", "database": "a.duckdb", "read_only": true, "as_objects": false, "params": []any{1}})
	checkAccepts(t, "duckdb", map[string]any{"sql": "SELECT 1", "path": "a.duckdb"})
	checkAccepts(t, "duckdb", map[string]any{"commands": []any{"SELECT 1"}, "db": "a.duckdb"})
	checkAccepts(t, "duckdb", map[string]any{"command": "SELECT 1", "db_path": "a.duckdb"})
	for _, k := range []string{"auth", "credentials"} {
		warned := false
		for _, p := range Check("duckdb", map[string]any{"query": "SELECT 1", k: "x"}) {
			warned = warned || (p.Key == k && p.Warning)
		}
		if !warned {
			t.Errorf("duckdb %s: no warning (the tool never reads it)", k)
		}
	}
	checkRefuses(t, "duckdb", map[string]any{"query": "SELECT 1", "read_only": "yes"}, "read_only")
}
