// Package credentials is the credential store behind a playbook's
// `keychain` (NoETL DSL spec "Document": credential declarations resolved before
// the run, read-only as keychain.<name>) and the /credentials API.
//
// A Credential is a named secret document {name, kind, description,
// grants, data}; data holds the secret fields (host, user, password,
// token...), grants the playbooks that may use it (grants.go). Store is
// the persistence contract, with method names entity-first
// (CredentialPut, CredentialGet) and sentinel errors (ErrNotFound,
// ErrInvalid, ErrNotGranted) for callers to branch on, never messages.
// Resolve turns a playbook's keychain declarations into the values
// templates read; Guard gives values only to granted playbooks.
//
// Backends:
//
//   - Firestore (NewFirestore): the metadata (name, kind, description,
//     data field names, grants, the value's version) in documents
//     credentials/{name}, the values in a Values store: SecretManager (one
//     Secret Manager secret noetl-cred-<name> per credential, a version per
//     put: GCP) or FirestoreValues (sealed with the deployment's key in
//     credential_values/{name}.{version}: the local emulator stack). Never
//     a value in plain text in Firestore.
//   - Memory (NewMemory): an in-process map for unit tests.
//
// credentialstest.Run is the conformance suite of every Store, and
// credentialstest.RunValues of every Values driver (the Secret Manager
// one runs against an in-process fake Secret Manager server, smfake).
package credentials

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// Sentinel errors. Store methods and Resolve wrap them; test with errors.Is
// (or errs.Is with their code).
var (
	// ErrNotFound: no credential has that name (CredentialGet,
	// CredentialDelete, and Resolve for a declaration naming a missing
	// credential). Code errs.NotFound: not retried.
	ErrNotFound = errs.Sentinel(errs.NotFound, "credentials: not found")
	// ErrInvalid: a credential or a keychain declaration is malformed
	// (bad name, unknown kind, missing data or required fields). Code
	// errs.InvalidArgument.
	ErrInvalid = errs.Sentinel(errs.InvalidArgument, "credentials: invalid")
)

// Kinds of credential (canonical names). A kind decides which data fields
// are required and which derived fields Resolve adds.
const (
	// KindPostgres: a PostgreSQL connection, the `auth` mapping of the
	// postgres task kind: {host, port, user, password, database, sslmode,
	// ...} (db_* aliases accepted) or {dsn}.
	KindPostgres = "postgres"
	// KindHTTPBearer: {token}; Resolve adds headers {Authorization:
	// "Bearer <token>"}.
	KindHTTPBearer = "http_bearer"
	// KindHTTPBasic: {username, password}; Resolve adds headers
	// {Authorization: "Basic <base64(username:password)>"}.
	KindHTTPBasic = "http_basic"
	// KindHTTPHeader: {header, value} (one header) or {headers: {name:
	// value}}; Resolve adds headers.
	KindHTTPHeader = "http_header"
	// KindSecret: any non-empty mapping of fields (generic secret).
	KindSecret = "secret"
	// KindNATS: a NATS server connection, as NoETL's v2 end-to-end
	// fixtures register it: {nats_url, nats_user, nats_password} ("url",
	// "user"/"username", "password" accepted too) or {nats_url, token}. nats_url is a
	// nats://, tls://, ws:// or wss:// URL (several separated by commas).
	KindNATS = "nats"
	// KindPubSub: a Google Pub/Sub connection, as NoETL's v2 end-to-end
	// fixtures register it: {"endpoint": "<host:port of the emulator>"}
	// locally; in
	// GCP {"project": ...} and optionally {"token"} (a bearer token) —
	// without endpoint and token the client uses Application Default
	// Credentials.
	KindPubSub = "pubsub"
	// KindGCS: a Google Cloud Storage connection: {"endpoint": "<URL of
	// fake-gcs-server>"} locally; in GCP {"project"} and optionally
	// {"service_account_json"} (the key file's JSON, as an object or a
	// string) — without them the client uses Application Default
	// Credentials.
	KindGCS = "gcs"
	// KindKafka: Kafka brokers, as NoETL's subscription fixtures register
	// them (type kafka): {"brokers": "host:port[,host:port...]"} (a string,
	// or a list of host:port; "bootstrap_servers" accepted too).
	// Plaintext brokers only, as NoETL's Kafka source.
	KindKafka = "kafka"
	// KindS3: an S3-compatible object store (AWS S3, or Cloud Storage's
	// XML API with HMAC keys): {"access_key_id", "secret_access_key"}
	// (NoETL's aws credential fields; "key_id"/"secret" and
	// "aws_access_key_id"/"aws_secret_access_key" accepted too), optional
	// "session_token", "region" and "endpoint" (a URL: an S3-compatible
	// server, e.g. https://storage.googleapis.com; default AWS).
	KindS3 = "s3"
)

// Kinds lists the canonical kinds, sorted.
var Kinds = []string{KindGCS, KindHTTPBasic, KindHTTPBearer, KindHTTPHeader, KindKafka, KindNATS, KindPostgres, KindPubSub, KindS3, KindSecret}

// kindAliases maps the spellings found in NoETL playbooks and credential
// files to the canonical kinds.
var kindAliases = map[string]string{
	"postgres": KindPostgres, "postgresql": KindPostgres, "postgres_credential": KindPostgres, "pg": KindPostgres,
	"http_bearer": KindHTTPBearer, "bearer": KindHTTPBearer, "bearer_token": KindHTTPBearer,
	"http_basic": KindHTTPBasic, "basic": KindHTTPBasic, "basic_auth": KindHTTPBasic,
	"http_header": KindHTTPHeader, "header": KindHTTPHeader,
	"secret": KindSecret, "generic": KindSecret, "credential": KindSecret,
	"nats": KindNATS, "nats_credential": KindNATS, "jetstream": KindNATS,
	"pubsub": KindPubSub, "google_pubsub": KindPubSub, "gcp_pubsub": KindPubSub,
	"gcs": KindGCS, "google_cloud_storage": KindGCS, "gcs_service_account": KindGCS,
	"kafka": KindKafka, "kafka_credential": KindKafka,
	"s3": KindS3, "aws": KindS3, "aws_s3": KindS3, "hmac": KindS3, "gcs_hmac": KindS3,
}

// NormalizeKind returns the canonical kind for k (case-insensitive; NoETL
// aliases such as postgres_credential, bearer, basic, header and
// credential are accepted) and whether k is known.
func NormalizeKind(k string) (string, bool) {
	c, ok := kindAliases[strings.ToLower(strings.TrimSpace(k))]
	return c, ok
}

// MaxNameLen bounds a credential name.
const MaxNameLen = 128

// Credential is one stored credential.
type Credential struct {
	// Name identifies the credential: 1..MaxNameLen characters of
	// [A-Za-z0-9_-] (Secret Manager's secret-id alphabet), not of the
	// form __x__ (reserved by Firestore).
	Name string `json:"name"`
	// Kind is one of Kinds (or an alias, normalised by CredentialPut).
	Kind string `json:"kind"`
	// Description is free text, never secret.
	Description string `json:"description,omitempty"`
	// Grants are the playbooks that may use the credential (grant
	// patterns, ValidateGrant): none by default. Not secret.
	Grants []string `json:"grants"`
	// Data holds the secret fields. Values are JSON values; they come back
	// from a store the way JSON decodes them with jsonx (whole numbers as
	// int64, other numbers float64, maps map[string]any, lists []any).
	Data map[string]any `json:"data"`
	// CreatedAt is set by the store on the first put (UTC).
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is set by the store on every put (UTC).
	UpdatedAt time.Time `json:"updated_at"`
}

// Summary is a credential without its data (CredentialList, the GET
// /credentials views).
type Summary struct {
	// Name is the credential's name.
	Name string `json:"name"`
	// Kind is the canonical kind.
	Kind string `json:"kind"`
	// Description is the credential's description.
	Description string `json:"description"`
	// Keys are the names of the data fields, sorted (never their values).
	Keys []string `json:"keys"`
	// Grants are the credential's grant patterns, in the order given
	// (an empty, non-nil slice for none).
	Grants []string `json:"grants"`
	// CreatedAt is when the credential was first put (UTC).
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the credential was last put (UTC).
	UpdatedAt time.Time `json:"updated_at"`
}

// Summary returns c without its data.
func (c Credential) Summary() Summary {
	return Summary{Name: c.Name, Kind: c.Kind, Description: c.Description, Keys: DataKeys(c.Data),
		Grants: GrantsOrEmpty(c.Grants), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// GrantsOrEmpty returns a copy of g, non-nil (a Summary's Grants are
// never nil, in every driver).
func GrantsOrEmpty(g []string) []string {
	out := make([]string, len(g))
	copy(out, g)
	return out
}

// DataKeys returns the keys of data, sorted (an empty, non-nil slice for
// no keys).
func DataKeys(data map[string]any) []string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Store persists credentials. Implementations are safe for concurrent use
// and never retry. Firestore (metadata) over a Values store is the
// backend of GCP (SecretManager) and of the emulator stack
// (FirestoreValues), Memory the unit-test one; credentialstest.Run is the
// conformance suite. Grants and Data are copied in and out.
type Store interface {
	// CredentialPut creates or replaces the credential named c.Name, after
	// Validate (an invalid credential is an error wrapping ErrInvalid and
	// nothing is written). The stored kind is the canonical one. The
	// store sets the timestamps: CreatedAt on the first put (kept by later
	// puts), UpdatedAt on every put; the caller's values are ignored. Data
	// is copied: later changes to c.Data do not affect the store.
	CredentialPut(ctx context.Context, c Credential) error
	// CredentialGet returns the credential, with a fresh copy of its data;
	// ErrNotFound if there is none.
	CredentialGet(ctx context.Context, name string) (*Credential, error)
	// CredentialInfo returns the credential's Summary (its metadata and
	// grants) without reading its data; ErrNotFound if there is none.
	CredentialInfo(ctx context.Context, name string) (*Summary, error)
	// CredentialList returns every credential's Summary (never data),
	// sorted by name; an empty, non-nil slice when there are none.
	CredentialList(ctx context.Context) ([]Summary, error)
	// CredentialDelete removes the credential; ErrNotFound if there is
	// none.
	CredentialDelete(ctx context.Context, name string) error
}

// sentinelError is a message that wraps a sentinel without repeating its
// text.
type sentinelError struct {
	msg      string
	sentinel error
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.sentinel }

// invalidf returns an error with the formatted message wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return &sentinelError{msg: fmt.Sprintf(format, args...), sentinel: ErrInvalid}
}

// NotFoundf returns an error with the formatted message that wraps
// ErrNotFound (so errs.Code gives NotFound): the not-found error of every
// driver (credfirestore, credsecretmanager).
func NotFoundf(format string, args ...any) error {
	return &sentinelError{msg: fmt.Sprintf(format, args...), sentinel: ErrNotFound}
}

// ValidateName checks a credential name (see Credential.Name); the error
// wraps ErrInvalid.
func ValidateName(name string) error {
	if name == "" {
		return invalidf("name is required")
	}
	if len(name) > MaxNameLen {
		return invalidf("name %.20q... is longer than %d characters", name, MaxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return invalidf("name %q may only contain letters, digits, '_' and '-'", name)
		}
	}
	if len(name) >= 4 && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__") {
		return invalidf("name %q is reserved (names of the form __x__ are Firestore's)", name)
	}
	return nil
}

// Validate checks c and returns every problem found, joined with
// errors.Join (Unwrap() []error lists them; each message is one plain
// sentence, and each wraps ErrInvalid). Rules: a valid name (ValidateName), a known kind
// (NormalizeKind), valid grants (at most MaxGrants, each ValidateGrant),
// non-empty data, and per kind: postgres needs a host
// (host, db_host, hostname or hostaddr) or a DSN (dsn, connection or
// connection_string); http_bearer a string token (or access_token);
// http_basic string username (or user) and password; http_header a string
// header and value, or a non-empty headers mapping of strings; nats a
// nats_url (or url) of scheme nats, tls, ws or wss, and a user only with a
// password (and the reverse); pubsub and gcs at least one of endpoint,
// project, token (pubsub) or service_account_json (gcs), an endpoint being
// host:port or an http(s) URL. Fields a kind reads must have the right type
// (strings; service_account_json an object or JSON text).
func (c Credential) Validate() error {
	var errs []error
	if err := ValidateName(c.Name); err != nil {
		errs = append(errs, err)
	}
	kind, ok := NormalizeKind(c.Kind)
	switch {
	case strings.TrimSpace(c.Kind) == "":
		errs = append(errs, invalidf("kind is required (one of %s)", strings.Join(Kinds, ", ")))
	case !ok:
		errs = append(errs, invalidf("unknown kind %q (one of %s)", c.Kind, strings.Join(Kinds, ", ")))
	}
	errs = append(errs, validateGrants(c.Grants)...)
	if len(c.Data) == 0 {
		errs = append(errs, invalidf("data is required (a non-empty mapping of the secret fields)"))
	} else if ok {
		for _, p := range kindProblems(kind, c.Data) {
			errs = append(errs, invalidf("%s", p))
		}
	}
	return errors.Join(errs...)
}

// kindProblems lists what data lacks for kind.
func kindProblems(kind string, data map[string]any) []string {
	var out []string
	switch kind {
	case KindPostgres:
		if !hasAny(data, "host", "db_host", "hostname", "hostaddr", "dsn", "connection", "connection_string") {
			out = append(out, "a postgres credential needs host (or db_host) or dsn in data")
		}
	case KindHTTPBearer:
		if _, ok := firstString(data, "token", "access_token"); !ok {
			out = append(out, "an http_bearer credential needs a string token in data")
		}
	case KindHTTPBasic:
		if _, ok := firstString(data, "username", "user"); !ok {
			out = append(out, "an http_basic credential needs a string username in data")
		}
		if _, ok := data["password"].(string); !ok {
			out = append(out, "an http_basic credential needs a string password in data")
		}
	case KindHTTPHeader:
		if _, err := headerFields(data); err != nil {
			out = append(out, err.Error())
		}
	case KindNATS:
		out = append(out, natsProblems(data)...)
	case KindPubSub:
		out = append(out, cloudProblems("pubsub", data, "token", "access_token")...)
	case KindGCS:
		out = append(out, cloudProblems("gcs", data, "service_account_json", "credentials_json")...)
	case KindKafka:
		out = append(out, kafkaProblems(data)...)
	case KindS3:
		out = append(out, s3Problems(data)...)
	}
	return out
}

func hasAny(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil && v != "" {
			return true
		}
	}
	return false
}

// firstString returns the first non-empty string among keys.
func firstString(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// headerFields returns the headers an http_header credential sets.
func headerFields(data map[string]any) (map[string]any, error) {
	if h, ok := data["headers"]; ok {
		hm, isMap := h.(map[string]any)
		if !isMap || len(hm) == 0 {
			return nil, errors.New("an http_header credential's headers must be a non-empty mapping of header name to string value")
		}
		out := make(map[string]any, len(hm))
		for k, v := range hm {
			s, isStr := v.(string)
			if !isStr || k == "" {
				return nil, fmt.Errorf("an http_header credential's header %q must have a string value", k)
			}
			out[k] = s
		}
		return out, nil
	}
	name, okName := firstString(data, "header", "header_name")
	value, okValue := data["value"].(string)
	if !okName || !okValue {
		return nil, errors.New("an http_header credential needs string header and value in data (or a headers mapping)")
	}
	return map[string]any{name: value}, nil
}
