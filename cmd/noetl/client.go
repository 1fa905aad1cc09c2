package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// isLocal reports whether the api URL names this machine (127.0.0.0/8,
// ::1, localhost): no identity token is minted for it.
func isLocal(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// lookPath finds an executable on the app's PATH.
func (a *app) lookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(a.env("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// bearer returns the token sent as "Authorization: Bearer": --token,
// else $NOETL_API_TOKEN, else for a non-local api an identity token from
// gcloudTokenArgs ("" for a local api). It is resolved once per
// invocation; a missing or failing gcloud is ExitUnavailable.
func (a *app) bearer() (string, error) {
	if a.tokenDone {
		return a.token, nil
	}
	tok := a.tokenFlag
	if tok == "" {
		tok = a.env("NOETL_API_TOKEN")
	}
	base := a.base()
	if tok == "" && !isLocal(base) {
		gc, err := a.lookPath("gcloud")
		if err != nil {
			return "", fail(ExitUnavailable, "the api at %s is not local and no token was given: pass --token or set NOETL_API_TOKEN, or install the Google Cloud SDK so that `gcloud auth print-identity-token` can mint one (gcloud is not on PATH)", base)
		}
		args := a.gcloudTokenArgs(base)
		cmd := exec.Command(gc, args...)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			return "", fail(ExitUnavailable, "gcloud %s failed (%v): %s (log in with `gcloud auth login`; a person impersonates the operator account: --impersonate-service-account or $NOETL_IMPERSONATE_SERVICE_ACCOUNT; or pass --token)", strings.Join(args, " "), err, strings.TrimSpace(se.String()))
		}
		tok = strings.TrimSpace(so.String())
		if tok == "" {
			return "", fail(ExitUnavailable, "gcloud %s printed no token (pass --token)", strings.Join(args, " "))
		}
		a.tokenMinted = true
	}
	a.token, a.tokenDone = tok, true
	return tok, nil
}

// gcloudTokenArgs are the arguments of the gcloud command that mints the
// identity token of a non-local api at base: its audience is base (the
// api accepts its own URL, NOETL_API_AUDIENCES: use the api_url
// Terraform outputs), with the email claim the api requires
// (--include-email), as the service account of --impersonate-service-account
// or $NOETL_IMPERSONATE_SERVICE_ACCOUNT when set (gcloud mints tokens for
// an audience only for service accounts).
func (a *app) gcloudTokenArgs(base string) []string {
	args := []string{"auth", "print-identity-token", "--audiences=" + base, "--include-email"}
	sa := a.impersonate
	if sa == "" {
		sa = a.env("NOETL_IMPERSONATE_SERVICE_ACCOUNT")
	}
	if sa != "" {
		args = append(args, "--impersonate-service-account="+sa)
	}
	return args
}

// response is one api answer.
type response struct {
	status int
	body   []byte
}

// apiError is the {"error", "problems"} body of a 4xx/5xx.
type apiError struct {
	Error    string `json:"error"`
	Message  string `json:"message"`
	Problems []any  `json:"problems"`
}

// send performs one request to the api: path is relative to the base
// (e.g. "/executions/ID"), body (if not nil) is sent as JSON. Only a
// transport error is returned (ExitUnavailable); the status is the
// caller's to judge (see check). A 401 to a token minted by gcloud (an
// identity token lives an hour; run and events --follow may outlive it)
// mints a new token and sends the request once more.
func (a *app) send(method, path string, body any) (*response, error) {
	r, err := a.sendOnce(method, path, body)
	if err == nil && r.status == http.StatusUnauthorized && a.tokenMinted {
		a.token, a.tokenDone, a.tokenMinted = "", false, false
		return a.sendOnce(method, path, body)
	}
	return r, err
}

func (a *app) sendOnce(method, path string, body any) (*response, error) {
	tok, err := a.bearer()
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fail(ExitInvalid, "encode request: %v", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base()+path, rd)
	if err != nil {
		return nil, fail(ExitInvalid, "bad api URL %q: %v", a.base(), err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		hint := ""
		if isLocal(a.base()) {
			hint = " (is the local stack up? scripts/up)"
		}
		return nil, &exitError{code: ExitUnavailable, transport: true, msg: fmt.Sprintf("api unreachable at %s: %v%s", a.base(), unwrapURLError(err), hint)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fail(ExitUnavailable, "api at %s: reading the answer to %s %s: %v", a.base(), method, path, err)
	}
	return &response{status: resp.StatusCode, body: b}, nil
}

// unwrapURLError drops the "Get \"url\": " prefix net/http adds.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// check maps a non-2xx answer to an exitError; what names the object
// of the request for messages ("execution ID").
func (a *app) check(method, path string, r *response, what string) error {
	if r.status >= 200 && r.status < 300 {
		return nil
	}
	var ae apiError
	_ = json.Unmarshal(r.body, &ae)
	msg := ae.Error
	if msg == "" {
		msg = strings.TrimSpace(string(r.body))
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	path, _, _ = strings.Cut(path, "?")
	switch {
	case r.status == http.StatusNotFound && strings.HasPrefix(ae.Error, "no route for"):
		return fail(ExitUnavailable, "the api at %s does not serve %s %s (404: %s); is it an older deployment?", a.base(), method, path, msg)
	case r.status == http.StatusNotFound:
		if msg == "" {
			msg = what + " not found"
		}
		return fail(ExitNotFound, "%s (404)", msg)
	case r.status == http.StatusForbidden && strings.Contains(msg, "is not granted to"):
		// A playbook refused a credential (credentials by grant): the
		// request, not the caller, is at fault.
		return fail(ExitInvalid, "%s (403)", msg)
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return fail(ExitUnavailable, "%s %s: unauthorized (%d): %s; pass --token, set NOETL_API_TOKEN, or check the principal's invoker role", method, a.base()+path, r.status, msg)
	case r.status >= 500:
		return fail(ExitUnavailable, "api at %s answered %d to %s %s: %s", a.base(), r.status, method, path, msg)
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "%s (%d)", msg, r.status)
		if ae.Message != "" && ae.Message != ae.Error {
			b.WriteString("\n" + ae.Message)
		} else {
			for _, p := range ae.Problems {
				pb, _ := json.Marshal(p)
				b.WriteString("\n  " + string(pb))
			}
		}
		return fail(ExitInvalid, "%s", b.String())
	}
}

// call sends a request and returns the body of a 2xx answer; anything
// else is an exitError.
func (a *app) call(method, path string, body any, what string) ([]byte, error) {
	r, err := a.send(method, path, body)
	if err != nil {
		return nil, err
	}
	if err := a.check(method, path, r, what); err != nil {
		return nil, err
	}
	return r.body, nil
}

// getJSON GETs path and decodes a 2xx body into v (jsonx: integers stay
// int64 in maps).
func (a *app) getJSON(path, what string, v any) ([]byte, error) {
	b, err := a.call(http.MethodGet, path, nil, what)
	if err != nil {
		return nil, err
	}
	if err := jsonx.Unmarshal(b, v); err != nil {
		return nil, fail(ExitUnavailable, "api at %s: GET %s answered non-JSON: %v", a.base(), path, err)
	}
	return b, nil
}

// transient reports whether a polling error may heal by itself: the api
// unreachable or answering 5xx (not 401/403, not 4xx).
func transient(r *response, err error) bool {
	if err != nil {
		var ee *exitError
		return errors.As(err, &ee) && ee.transport
	}
	return r.status >= 500 || r.status == http.StatusTooManyRequests
}

// poller GETs a path repeatedly, tolerating transient failures for at
// most giveUp since the last good answer (never a silent wait).
type poller struct {
	a      *app
	lastOK time.Time
	last   string // the last transient failure
}

func (a *app) newPoller() *poller { return &poller{a: a, lastOK: time.Now()} }

// get returns (body, nil) on a 2xx, (nil, nil) on a transient failure
// still within the window, and an exitError otherwise: at once for 404
// (ExitNotFound), 401/403 and other 4xx, after giveUp of transient
// failures (ExitUnavailable).
func (p *poller) get(path, what string) ([]byte, error) {
	r, err := p.a.send(http.MethodGet, path, nil)
	if transient(r, err) {
		if err != nil {
			p.last = err.Error()
		} else {
			p.last = p.a.check(http.MethodGet, path, r, what).Error()
		}
		if time.Since(p.lastOK) >= p.a.giveUp {
			return nil, fail(ExitUnavailable, "the api at %s has not answered for %s; giving up (last error: %s)", p.a.base(), p.a.giveUp, p.last)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := p.a.check(http.MethodGet, path, r, what); err != nil {
		return nil, err
	}
	p.lastOK = time.Now()
	return r.body, nil
}

// escapePath escapes each segment of a slash-separated name (catalog
// paths such as "examples/hello").
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
