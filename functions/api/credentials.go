package api

// The /credentials routes: the credential store behind playbook keychains
// (shared/credentials). Secret values go in and are never served back
// (NoETL observability spec §8.9 "API Masking"), nor logged:
//
//	POST   /credentials         {"name", "kind", "description", "grants": [...], "data": {...}}
//	                            → 201 {"name", "kind", "grants"} (creates or replaces);
//	                            400 {"error", "problems": [...]}
//	GET    /credentials         → 200 {"credentials": [{name, kind, description, grants, created_at, updated_at}]}
//	GET    /credentials/{name}  → 200 {name, kind, description, keys, grants, created_at, updated_at}; 404
//
// grants are the playbooks that may use the credential (grant patterns,
// shared/credentials ValidateGrant: "examples/*", "tests/fixtures/**",
// "inline:<principal>"): none by default, so a credential stored without
// grants is usable by no playbook until it is set again with some.
//	DELETE /credentials/{name}  → 204; 404
//
// Other methods are 405 with an Allow header; store failures are 503.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/wiring"
)

// maxCredentialBody bounds a POST /credentials body.
const maxCredentialBody = 1 << 20

var (
	credMu sync.Mutex
	// credStore is the instance's credential store: nil until
	// CredentialStore opens it; tests assign credentials.NewMemory().
	credStore credentials.Store
)

// CredentialStore returns the instance's credential store, opening it on
// first use (wiring.Deps.Credentials: metadata in Firestore, values in
// Secret Manager or sealed on the stack). An error means the runtime
// could not be opened; the next call tries again.
func CredentialStore(ctx context.Context) (credentials.Store, error) {
	return openOnce(ctx, &credMu, &credStore, func(d *wiring.Deps) (credentials.Store, error) {
		return d.Credentials, nil
	})
}

// CredentialRequest is the body of POST /credentials.
type CredentialRequest struct {
	// Name is the credential's name ([A-Za-z0-9_-], at most 128
	// characters); keychain declarations reference it.
	Name string `json:"name"`
	// Kind is postgres, http_bearer, http_basic, http_header or secret
	// (NoETL aliases such as postgres_credential are accepted).
	Kind string `json:"kind"`
	// Description is free text, shown by GET.
	Description string `json:"description"`
	// Grants are the playbooks that may use the credential (grant
	// patterns; none: no playbook).
	Grants []string `json:"grants"`
	// Data is the JSON object of secret fields; never served back.
	Data any `json:"data"`
}

// CredentialView is a credential as GET shows it: metadata, never data
// values. Keys (the data field names) is set by GET /credentials/{name}
// only.
type CredentialView struct {
	// Name is the credential's name.
	Name string `json:"name"`
	// Kind is the canonical kind.
	Kind string `json:"kind"`
	// Description is the credential's description.
	Description string `json:"description"`
	// Keys are the data field names, sorted (GET /credentials/{name}).
	Keys []string `json:"keys,omitempty"`
	// Grants are the credential's grant patterns.
	Grants []string `json:"grants"`
	// CreatedAt is the first put, RFC 3339 UTC.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is the last put, RFC 3339 UTC.
	UpdatedAt time.Time `json:"updated_at"`
}

func viewOf(s credentials.Summary, withKeys bool) CredentialView {
	grants := s.Grants
	if grants == nil {
		grants = []string{}
	}
	v := CredentialView{Name: s.Name, Kind: s.Kind, Description: s.Description, Grants: grants,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
	if withKeys {
		v.Keys = s.Keys
		if v.Keys == nil {
			v.Keys = []string{}
		}
	}
	return v
}

// Credentials serves the /credentials routes (see the table above). rest
// is the request path after "/credentials": "" or "/" for the collection,
// "/{name}" for one credential (a trailing slash is ignored).
func Credentials(w http.ResponseWriter, r *http.Request, rest string) {
	collection{create: credentialCreate, list: credentialList, get: credentialGet, del: credentialDelete}.serve(w, r, rest)
}

// openCredentials returns the store or writes a 500.
func openCredentials(w http.ResponseWriter, r *http.Request) (credentials.Store, bool) {
	return opened(r.Context(), w, CredentialStore)
}

func badCredential(w http.ResponseWriter, problems []string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid credential: " + strings.Join(problems, "; "), "problems": problems})
}

func credentialCreate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCredentialBody+1))
	if err != nil {
		badCredential(w, []string{"cannot read body: " + err.Error()})
		return
	}
	if len(body) > maxCredentialBody {
		badCredential(w, []string{"body is larger than 1 MiB"})
		return
	}
	var req CredentialRequest
	if err := jsonx.Unmarshal(body, &req); err != nil {
		badCredential(w, []string{"body must be a JSON object {name, kind, description, data}: " + err.Error()})
		return
	}
	var problems []string
	data, isMap := req.Data.(map[string]any)
	if req.Data != nil && !isMap {
		problems = append(problems, "data must be a JSON object of the secret fields")
	}
	c := credentials.Credential{Name: req.Name, Kind: req.Kind, Description: req.Description, Grants: req.Grants, Data: jsonx.Normalize(data).(map[string]any)}
	if err := c.Validate(); err != nil {
		problems = append(problems, messages(err)...)
	}
	if len(problems) > 0 {
		badCredential(w, problems)
		return
	}
	s, ok := openCredentials(w, r)
	if !ok {
		return
	}
	if err := s.CredentialPut(r.Context(), c); err != nil {
		if errors.Is(err, credentials.ErrInvalid) {
			badCredential(w, messages(err))
			return
		}
		unavailable(w, err)
		return
	}
	kind, _ := credentials.NormalizeKind(c.Kind)
	grants := c.Grants
	if grants == nil {
		grants = []string{}
	}
	slog.Default().InfoContext(r.Context(), "credential stored", "name", c.Name, "kind", kind, "keys", credentials.DataKeys(c.Data), "grants", grants, "by", principal(r))
	writeJSON(w, http.StatusCreated, map[string]any{"name": c.Name, "kind": kind, "grants": grants})
}

// messages lists the messages of a joined error (one per problem).
func messages(err error) []string {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func credentialList(w http.ResponseWriter, r *http.Request) {
	s, ok := openCredentials(w, r)
	if !ok {
		return
	}
	list, err := s.CredentialList(r.Context())
	if err != nil {
		unavailable(w, err)
		return
	}
	views := make([]CredentialView, 0, len(list))
	for _, sm := range list {
		views = append(views, viewOf(sm, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{"credentials": views})
}

func credentialGet(w http.ResponseWriter, r *http.Request, name string) {
	s, ok := openCredentials(w, r)
	if !ok {
		return
	}
	info, err := s.CredentialInfo(r.Context(), name) // metadata only: no value is read
	if !found(w, err, credentials.ErrNotFound, "credential "+name+" not found", unavailable) {
		return
	}
	writeJSON(w, http.StatusOK, viewOf(*info, true))
}

func credentialDelete(w http.ResponseWriter, r *http.Request, name string) {
	s, ok := openCredentials(w, r)
	if !ok {
		return
	}
	err := s.CredentialDelete(r.Context(), name)
	if !found(w, err, credentials.ErrNotFound, "credential "+name+" not found", unavailable) {
		return
	}
	slog.Default().InfoContext(r.Context(), "credential deleted", "name", name)
	w.WriteHeader(http.StatusNoContent)
}
