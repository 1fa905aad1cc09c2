package credentials

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// natsProblems lists what a nats credential's data lacks (see KindNATS).
func natsProblems(data map[string]any) []string {
	var out []string
	raw, ok := firstValue(data, "nats_url", "url")
	if !ok {
		return []string{"a nats credential needs nats_url (e.g. nats://127.0.0.1:4222) in data"}
	}
	s, isStr := raw.(string)
	if !isStr || strings.TrimSpace(s) == "" {
		return []string{"a nats credential's nats_url must be a non-empty string"}
	}
	for _, one := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			out = append(out, fmt.Sprintf("a nats credential's nats_url %q is not a URL of the form nats://host:port", redactURL(one)))
			continue
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			out = append(out, fmt.Sprintf("a nats credential's nats_url %q must use the scheme nats, tls, ws or wss", redactURL(one)))
		}
	}
	user, hasUser := firstValue(data, "nats_user", "user", "username")
	pass, hasPass := firstValue(data, "nats_password", "password")
	if hasUser {
		if _, ok := user.(string); !ok {
			out = append(out, "a nats credential's nats_user must be a string")
		}
	}
	if hasPass {
		if _, ok := pass.(string); !ok {
			out = append(out, "a nats credential's nats_password must be a string")
		}
	}
	if hasUser != hasPass {
		out = append(out, "a nats credential needs nats_user and nats_password together (or neither)")
	}
	if tok, ok := firstValue(data, "token", "nats_token"); ok {
		if _, isStr := tok.(string); !isStr {
			out = append(out, "a nats credential's token must be a string")
		}
	}
	return out
}

// cloudProblems lists what a pubsub or gcs credential's data lacks: one of
// endpoint, project or the kind's own secret fields, with the right types.
func cloudProblems(kind string, data map[string]any, secretKeys ...string) []string {
	var out []string
	found := false
	if v, ok := firstValue(data, "endpoint"); ok {
		found = true
		s, isStr := v.(string)
		if !isStr || !validEndpoint(s) {
			out = append(out, fmt.Sprintf("a %s credential's endpoint must be host:port or an http(s) URL, got %q", kind, fmt.Sprint(v)))
		}
	}
	if v, ok := firstValue(data, "project", "project_id"); ok {
		found = true
		if s, isStr := v.(string); !isStr || strings.TrimSpace(s) == "" {
			out = append(out, fmt.Sprintf("a %s credential's project must be a non-empty string", kind))
		}
	}
	for _, k := range secretKeys {
		v, ok := firstValue(data, k)
		if !ok {
			continue
		}
		found = true
		switch k {
		case "service_account_json", "credentials_json":
			if !validJSONObject(v) {
				out = append(out, fmt.Sprintf("a %s credential's %s must be the service account key as an object or as JSON text", kind, k))
			}
		default:
			if s, isStr := v.(string); !isStr || s == "" {
				out = append(out, fmt.Sprintf("a %s credential's %s must be a non-empty string", kind, k))
			}
		}
	}
	if !found {
		keys := append([]string{"endpoint", "project"}, secretKeys[0])
		out = append(out, fmt.Sprintf("a %s credential needs one of %s in data", kind, strings.Join(keys, ", ")))
	}
	return out
}

// firstValue returns the first present, non-nil value among keys.
func firstValue(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v, true
		}
	}
	return nil, false
}

// validEndpoint accepts host:port and http(s)://host[:port][/path].
func validEndpoint(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}
	host, port, err := net.SplitHostPort(s)
	return err == nil && host != "" && port != ""
}

// validJSONObject accepts a mapping or text holding a JSON object.
func validJSONObject(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case string:
		var m map[string]any
		return json.Unmarshal([]byte(x), &m) == nil && len(m) > 0
	}
	return false
}

// redactURL drops the password of a URL's userinfo for messages.
func redactURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// kafkaProblems lists what a kafka credential's data lacks (see KindKafka).
func kafkaProblems(data map[string]any) []string {
	raw, ok := firstValue(data, "brokers", "bootstrap_servers")
	if !ok {
		return []string{"a kafka credential needs brokers (host:port, comma-separated or a list) in data"}
	}
	brokers, err := KafkaBrokers(raw)
	if err != nil {
		return []string{"a kafka credential's " + err.Error()}
	}
	var out []string
	for _, b := range brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			out = append(out, fmt.Sprintf("a kafka credential's broker %q is not host:port", b))
		}
	}
	return out
}

// KafkaBrokers reads a broker list: a comma-separated string or a list of
// host:port strings (NoETL's subscription tool parse_brokers).
func KafkaBrokers(v any) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case string:
		for _, b := range strings.Split(x, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("brokers must be host:port strings, got %v", e)
			}
			out = append(out, strings.TrimSpace(s))
		}
	case []string:
		out = append(out, x...)
	default:
		return nil, fmt.Errorf("brokers must be a string or a list of host:port, got %T", v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("brokers is empty")
	}
	return out, nil
}

// s3Problems lists what an s3 credential's data lacks (see KindS3).
func s3Problems(data map[string]any) []string {
	var out []string
	id, hasID := firstValue(data, "access_key_id", "aws_access_key_id", "key_id")
	sec, hasSec := firstValue(data, "secret_access_key", "aws_secret_access_key", "secret")
	if !hasID || !hasSec {
		out = append(out, "an s3 credential needs access_key_id and secret_access_key in data")
	} else {
		if s, ok := id.(string); !ok || s == "" {
			out = append(out, "an s3 credential's access_key_id must be a non-empty string")
		}
		if s, ok := sec.(string); !ok || s == "" {
			out = append(out, "an s3 credential's secret_access_key must be a non-empty string")
		}
	}
	if v, ok := firstValue(data, "endpoint", "endpoint_url"); ok {
		s, isStr := v.(string)
		u, err := url.Parse(s)
		if !isStr || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, fmt.Sprintf("an s3 credential's endpoint must be an http(s) URL, got %q", fmt.Sprint(v)))
		}
	}
	return out
}
