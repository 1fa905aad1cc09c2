// Package console is the operator console the api function serves at
// /console/ (docs "Console"): the executions list (search by id, filters
// by status, playbook, creator and creation time, counts per status), one
// execution as a graph of its playbook, a timeline (Gantt chart) of its
// step runs, iterations and task attempts, its workload, events, results,
// failures and cost, a step inspector (each attempt's whole log, rendered
// input and error, the run's input and result, the step's source), the
// dead-letter queue, and the actions an operator's role allows (cancel,
// confirmed first; rerun from the start, the failed step or a chosen one
// with a workload fix; DLQ replay with a patch, and discard).
//
// Pages are rendered on the server (html/template, with the graph and the
// timeline as inline SVG laid out in Go: package layout) and read without
// JavaScript; the one script (static/console.js) shows times in the
// visitor's zone and follows a running execution and the list. Assets are
// embedded; nothing comes from elsewhere, and the Content-Security-Policy
// says so. Every page passes through safeText last (safe.go): control
// characters and bidirectional overrides in what authors wrote are shown
// escaped. The stylesheet follows the system's dark or light scheme.
//
// Pages are routed by a net/http ServeMux (method and path patterns,
// routes in console.go).
//
// Authentication is the api's (shared/auth, the same authenticator and
// roles): a visitor either sends `Authorization: Bearer` (as
// `gcloud run services proxy` does for an identity token in GCP), or logs
// in with a form that POSTs a token, checked like the header and never
// put in a URL or a log, which opens a session kept sealed (AES-GCM under
// the deployment's key, shared/sign) in an HttpOnly, SameSite=Strict
// cookie (Secure over https) that never holds the token. Forms that act
// (cancel, DLQ replay and discard, log out) carry an anti-forgery token
// bound to the session (or, for header callers, to the principal and the
// day), and cross-site POSTs are refused by their Origin and
// Sec-Fetch-Site headers too.
//
// Data comes through Backend, which the api implements with its own
// routes and data access (functions/api/console.go): the same role checks,
// the same redaction, the same validation as its JSON routes, so the
// console follows the api when they change.
package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Backend is what the console reads and does, provided by the api.
type Backend interface {
	// Call serves an api request in process as the principal in ctx
	// (auth.PrincipalOf): the route's role check, then the route itself.
	// It returns the status code and the JSON body.
	Call(ctx context.Context, method, path string, body []byte) (int, []byte)
	// Source returns the playbook source an execution runs, with the
	// access GET /executions/{id} has (an *Error otherwise).
	Source(ctx context.Context, id string) (string, error)
	// Events returns an execution's events in the api's causal order,
	// redacted as GET /executions/{id}/events redacts them, and the sums
	// of its metered operations (what GET /executions/{id}/cost prices),
	// from one read (an *Error when not allowed).
	Events(ctx context.Context, id string) ([]types.Event, map[string]float64, error)
	// Result loads a result reference of execution id (one its events
	// carry: an attempt's whole log) as that execution reads it — its
	// own results, its parent's, its children's — redacted as its events
	// are, with the access GET /executions/{id} has (an *Error otherwise).
	Result(ctx context.Context, id string, ref any) (any, error)
}

// Error is a refusal or failure with its HTTP status.
type Error struct {
	Code    int
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Config configures a Handler.
type Config struct {
	// Backend is the api (required).
	Backend Backend
	// Authenticator returns the api's authenticator (required).
	Authenticator func(context.Context) (*auth.Authenticator, error)
	// Signer returns the deployment's signer (NOETL_SIGNING_KEY), which
	// seals sessions and signs anti-forgery tokens (required).
	Signer func(context.Context) (*sign.Signer, error)
	// RequiredRole is the api's role table (which role an api route
	// needs): the console shows an action only to whom may take it.
	RequiredRole func(method, path string) (auth.Role, bool)
	// SessionTTL is how long a login lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// DetailUnits is the most units (step runs plus loop iterations) an
	// execution may have for its page to read all of its events (default
	// DefaultDetailUnits); a larger one is shown from its state and loop
	// profiles (see execution.go).
	DetailUnits int
	// Log receives the console's own log lines (never a token or a form).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultSessionTTL is how long a console login lasts by default.
const DefaultSessionTTL = 8 * time.Hour

// DefaultDetailUnits is the default Config.DetailUnits.
const DefaultDetailUnits = 5000

// CookieName is the session cookie's name.
const CookieName = "noetl_console"

// Handler serves the console. Its paths are the api's: "/console/..."
// (after an optional "/api" prefix, as the api matches them).
type Handler struct {
	cfg  Config
	tmpl *template.Template
	mux  *http.ServeMux
	cop  *http.CrossOriginProtection
}

// New returns the console's handler.
func New(cfg Config) *Handler {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.DetailUnits <= 0 {
		cfg.DetailUnits = DefaultDetailUnits
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.RequiredRole == nil {
		cfg.RequiredRole = func(string, string) (auth.Role, bool) { return auth.Admin, false }
	}
	h := &Handler{cfg: cfg, tmpl: template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")), cop: http.NewCrossOriginProtection()}
	h.routes()
	return h
}

// IsPath reports whether an api path is the console's.
func IsPath(path string) bool {
	p := strings.TrimPrefix(path, "/api")
	return p == "/console" || strings.HasPrefix(p, "/console/")
}

// visit is one request to the console.
type visit struct {
	h *Handler
	w http.ResponseWriter
	r *http.Request
	// base is the console's URL path as the browser sees it (the
	// forwarded prefix + "/console"), without a trailing slash.
	base string
	// rest is the path after "/console".
	rest      string
	principal auth.Principal
	// session is the session the visitor came with (nil: header auth).
	session *auth.Session
	signer  *sign.Signer
}

// prefixRE is what a forwarded path prefix may look like.
var prefixRE = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+){0,8}$`)

// visitKey carries the visit in its request's context (to the mux's
// handlers).
type visitKey struct{}

// routes registers the console's pages on its mux (ServeMux patterns:
// the method, the path, {id}-like segments read with PathValue). Paths
// are the console's own, "/console/...", whatever prefix the browser
// sees (ServeHTTP strips "/api"). Every page but the login form and the
// static assets needs an authenticated visitor (page).
func (h *Handler) routes() {
	m := http.NewServeMux()
	page := func(pattern string, fn func(v *visit)) { m.HandleFunc(pattern, h.serve(true, fn)) }
	open := func(pattern string, fn func(v *visit)) { m.HandleFunc(pattern, h.serve(false, fn)) }
	open("GET /console", func(v *visit) { http.Redirect(v.w, v.r, v.base+"/", http.StatusSeeOther) })
	open("GET /console/static/{name...}", func(v *visit) { v.static(v.r.PathValue("name")) })
	open("/console/login", (*visit).login)
	page("GET /console/{$}", (*visit).executions)
	page("GET /console/search", (*visit).search)
	page("POST /console/logout", (*visit).logout)
	page("GET /console/dlq", (*visit).dlqList)
	page("GET /console/dlq/{$}", (*visit).dlqList)
	page("GET /console/dlq/{id}", func(v *visit) { v.dlqEntry(v.r.PathValue("id")) })
	page("POST /console/dlq/{id}/{action}", func(v *visit) {
		switch action := v.r.PathValue("action"); action {
		case "replay", "discard":
			v.dlqAction(v.r.PathValue("id"), action)
		default:
			v.notFound()
		}
	})
	page("GET /console/executions/{id}", func(v *visit) { v.execution(v.r.PathValue("id")) })
	page("GET /console/executions/{id}/cost", func(v *visit) { v.costPage(v.r.PathValue("id")) })
	page("GET /console/executions/{id}/events", func(v *visit) { v.eventsPage(v.r.PathValue("id")) })
	page("GET /console/executions/{id}/cancel", func(v *visit) { v.cancelPage(v.r.PathValue("id")) })
	page("POST /console/executions/{id}/cancel", func(v *visit) { v.cancel(v.r.PathValue("id")) })
	page("GET /console/executions/{id}/rerun", func(v *visit) { v.rerunPage(v.r.PathValue("id")) })
	page("POST /console/executions/{id}/rerun", func(v *visit) { v.rerun(v.r.PathValue("id")) })
	page("GET /console/executions/{id}/steps/{step}", func(v *visit) { v.inspector(v.r.PathValue("id"), v.r.PathValue("step")) })
	page("/", (*visit).notFound)
	h.mux = m
}

// serve adapts a page to the mux: the visit ServeHTTP made, with the
// matched request, authenticated first when auth is set (with its body
// bounded and nothing cached).
func (h *Handler) serve(authenticated bool, fn func(v *visit)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := r.Context().Value(visitKey{}).(*visit)
		v.r = r
		if authenticated {
			w.Header().Set("Cache-Control", "no-store")
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if !v.authenticate() {
				return
			}
			v.r = r.WithContext(auth.WithPrincipal(r.Context(), v.principal))
		} else if !strings.HasPrefix(v.rest, "/static/") {
			w.Header().Set("Cache-Control", "no-store")
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		}
		fn(v)
	}
}

// ServeHTTP implements http.Handler: the security headers, the
// cross-origin check of every form (net/http's CrossOriginProtection:
// Sec-Fetch-Site, else Origin against Host), then the page (routes).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	prefix := ""
	if strings.HasPrefix(p, "/api/") || p == "/api" {
		prefix, p = "/api", strings.TrimPrefix(p, "/api")
	}
	// The local functions host serves the api under /api and says so
	// (X-Forwarded-Prefix); Cloud Run serves it at the root.
	if fp := strings.TrimSuffix(r.Header.Get("X-Forwarded-Prefix"), "/"); fp != "" && prefixRE.MatchString(fp) {
		prefix = fp + prefix
	}
	v := &visit{h: h, w: w, r: r, base: prefix + "/console", rest: strings.TrimPrefix(p, "/console")}
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	if err := h.cop.Check(r); err != nil {
		hd.Set("Cache-Control", "no-store")
		v.fail(&Error{http.StatusForbidden, "cross-site request refused"})
		return
	}
	r2 := r.WithContext(context.WithValue(r.Context(), visitKey{}, v))
	if prefix != "" || p != r.URL.Path {
		u := *r.URL
		u.Path, u.RawPath = p, ""
		r2.URL = &u
	}
	h.mux.ServeHTTP(w, r2)
}

// notFound is the answer for a path that is no console page.
func (v *visit) notFound() {
	v.fail(&Error{http.StatusNotFound, "no console page " + v.r.Method + " " + v.base + v.rest})
}

// static serves an embedded asset.
func (v *visit) static(name string) {
	if name == "" || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		http.NotFound(v.w, v.r)
		return
	}
	b, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		http.NotFound(v.w, v.r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		v.w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		v.w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".svg"):
		v.w.Header().Set("Content-Type", "image/svg+xml")
	default:
		v.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	v.w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = v.w.Write(b)
}

// authenticate identifies the visitor: its Authorization header, else its
// session cookie. Without either, a GET goes to the login form; anything
// else is 401.
func (v *visit) authenticate() bool {
	ctx := v.r.Context()
	a, err := v.h.cfg.Authenticator(ctx)
	if err != nil {
		v.fail(&Error{http.StatusInternalServerError, err.Error()})
		return false
	}
	if v.r.Header.Get("Authorization") != "" {
		p, err := a.Authenticate(v.r)
		if err != nil {
			v.fail(&Error{auth.Status(err), err.Error()})
			return false
		}
		v.principal = p
		return v.openSigner()
	}
	if !v.openSigner() {
		return false
	}
	c, err := v.r.Cookie(CookieName)
	if err == nil {
		var s auth.Session
		b, oerr := v.signer.Open(sign.Session, c.Value)
		if oerr == nil && json.Unmarshal(b, &s) == nil {
			if p, rerr := a.Resume(s, v.h.cfg.Now()); rerr == nil {
				v.principal, v.session = p, &s
				return true
			}
		}
		v.clearCookie()
	}
	if v.r.Method == http.MethodGet || v.r.Method == http.MethodHead {
		next := v.base + v.rest
		if v.r.URL.RawQuery != "" {
			next += "?" + v.r.URL.RawQuery
		}
		http.Redirect(v.w, v.r, v.base+"/login?next="+url.QueryEscape(next), http.StatusSeeOther)
		return false
	}
	v.fail(&Error{http.StatusUnauthorized, "log in first"})
	return false
}

func (v *visit) openSigner() bool {
	s, err := v.h.cfg.Signer(v.r.Context())
	if err != nil {
		v.fail(&Error{http.StatusInternalServerError, err.Error()})
		return false
	}
	v.signer = s
	return true
}

// csrf is the anti-forgery token of the visitor's forms: bound to its
// session, or (header callers) to its principal and the day.
func (v *visit) csrf(day time.Time) string {
	subject := "hdr\x00" + v.principal.Name + "\x00" + day.UTC().Format("2006-01-02")
	if v.session != nil {
		subject = "ses\x00" + v.session.Nonce
	}
	return v.signer.Sign(sign.CSRF, []byte(subject))
}

// checkCSRF verifies a POSTed form's token (403 otherwise).
func (v *visit) checkCSRF() bool {
	got := v.r.PostFormValue("csrf")
	now := v.h.cfg.Now()
	for _, day := range []time.Time{now, now.Add(-24 * time.Hour)} {
		if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf(day))) == 1 {
			return true
		}
		if v.session != nil {
			break
		}
	}
	v.fail(&Error{http.StatusForbidden, "the form's anti-forgery token is missing or stale: reload the page and try again"})
	return false
}

// secure reports whether the visitor came over https (directly or through
// Cloud Run's front end).
func (v *visit) secure() bool {
	return v.r.TLS != nil || strings.EqualFold(v.r.Header.Get("X-Forwarded-Proto"), "https")
}

func (v *visit) setCookie(value string, expires time.Time) {
	http.SetCookie(v.w, &http.Cookie{Name: CookieName, Value: value, Path: v.base + "/", Expires: expires,
		HttpOnly: true, Secure: v.secure(), SameSite: http.SameSiteStrictMode})
}

func (v *visit) clearCookie() {
	http.SetCookie(v.w, &http.Cookie{Name: CookieName, Value: "", Path: v.base + "/", MaxAge: -1,
		HttpOnly: true, Secure: v.secure(), SameSite: http.SameSiteStrictMode})
}

// login serves the login form (GET) and opens a session (POST).
func (v *visit) login() {
	next := v.r.URL.Query().Get("next")
	if v.r.Method == http.MethodPost {
		next = v.r.PostFormValue("next")
	}
	next = v.inside(next)
	data := &loginPage{Next: next}
	switch v.r.Method {
	case http.MethodGet, http.MethodHead:
		v.render(http.StatusOK, "login", "Log in", data)
	case http.MethodPost:
		ctx := v.r.Context()
		a, err := v.h.cfg.Authenticator(ctx)
		if err != nil {
			v.fail(&Error{http.StatusInternalServerError, err.Error()})
			return
		}
		if !v.openSigner() {
			return
		}
		tok := strings.TrimSpace(v.r.PostFormValue("token"))
		if tok == "" {
			data.Error = "Enter a token."
			v.render(http.StatusBadRequest, "login", "Log in", data)
			return
		}
		s, p, err := a.Login(ctx, tok, v.h.cfg.SessionTTL, v.h.cfg.Now())
		if err != nil {
			data.Error = "The token was not accepted: " + strings.TrimPrefix(err.Error(), auth.ErrUnauthenticated.Error()+": ")
			v.render(http.StatusUnauthorized, "login", "Log in", data)
			return
		}
		b, _ := json.Marshal(s)
		sealed, err := v.signer.Seal(sign.Session, b)
		if err != nil {
			v.fail(&Error{http.StatusInternalServerError, "cannot seal the session: " + err.Error()})
			return
		}
		v.setCookie(sealed, time.Unix(s.Expires, 0))
		v.h.cfg.Log.InfoContext(ctx, "console login", "principal", p.Name, "role", p.Role.String())
		http.Redirect(v.w, v.r, next, http.StatusSeeOther)
	default:
		v.fail(&Error{http.StatusMethodNotAllowed, "method " + v.r.Method + " not allowed"})
	}
}

// inside returns next when it is a page of the console (a path under
// base, after cleaning, not the login form, with its query), else the
// executions list: a login never sends anyone elsewhere.
func (v *visit) inside(next string) string {
	home := v.base + "/"
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.ContainsAny(next, "\\\r\n\t") {
		return home
	}
	p := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && p != "/" {
		p += "/"
	}
	if !strings.HasPrefix(p, home) || strings.HasPrefix(p, v.base+"/login") || strings.HasPrefix(p, "//") {
		return home
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// logout ends the session.
func (v *visit) logout() {
	if !v.checkCSRF() {
		return
	}
	v.clearCookie()
	http.Redirect(v.w, v.r, v.base+"/login", http.StatusSeeOther)
}

// may reports whether the visitor's role allows an api route.
func (v *visit) may(method, path string) bool {
	need, public := v.h.cfg.RequiredRole(method, path)
	return public || v.principal.Role >= need
}

// call is Backend.Call decoding a 2xx JSON answer into out (an *Error
// with the api's message otherwise).
func (v *visit) call(method, path string, body any, out any) error {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	code, resp := v.h.cfg.Backend.Call(v.r.Context(), method, path, b)
	if code < 200 || code > 299 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(resp, &e)
		if e.Error == "" {
			e.Error = fmt.Sprintf("%s %s: HTTP %d", method, path, code)
		}
		return &Error{code, e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp, out); err != nil {
		return &Error{http.StatusBadGateway, fmt.Sprintf("%s %s: the api's answer is not JSON: %v", method, path, err)}
	}
	return nil
}

// errorPage is the data of the error page.
type errorPage struct {
	Code    int
	Message string
}

// fail renders an error page with err's status (500 for errors without
// one).
func (v *visit) fail(err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{http.StatusInternalServerError, err.Error()}
	}
	if e.Code == http.StatusUnauthorized {
		v.w.Header().Set("WWW-Authenticate", `Bearer realm="noetl"`)
	}
	v.render(e.Code, "error", http.StatusText(e.Code), &errorPage{Code: e.Code, Message: e.Message})
}

// page is what every template gets.
type page struct {
	Title     string
	Base      string
	Principal auth.Principal
	// LoggedIn: the visitor has a session (it can log out).
	LoggedIn bool
	CSRF     string
	// Nav is the current section ("executions", "dlq").
	Nav string
	// MayDLQ: the visitor's role reads the DLQ.
	MayDLQ bool
	Data   any
}

// render executes template name with data in the layout.
func (v *visit) render(code int, name, title string, data any) {
	p := &page{Title: title, Base: v.base, Principal: v.principal, LoggedIn: v.session != nil, Data: data}
	if v.signer != nil && v.principal.Name != "" {
		p.CSRF = v.csrf(v.h.cfg.Now())
		p.MayDLQ = v.may(http.MethodGet, "/dlq")
	}
	switch {
	case strings.HasPrefix(v.rest, "/dlq"):
		p.Nav = "dlq"
	case v.rest == "/" || strings.HasPrefix(v.rest, "/executions"):
		p.Nav = "executions"
	}
	v.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf strings.Builder
	if err := v.h.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		v.h.cfg.Log.ErrorContext(v.r.Context(), "console template", "template", name, "error", err)
		v.w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(v.w, "<!doctype html><title>Error</title><p>The page could not be rendered.</p>")
		return
	}
	v.w.WriteHeader(code)
	_, _ = v.w.Write([]byte(safeText(buf.String())))
}

// loginPage is the login form's data.
type loginPage struct {
	Next  string
	Error string
}
