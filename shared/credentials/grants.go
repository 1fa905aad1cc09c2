package credentials

// Grants (README "Security": credentials by grant). A credential names the
// playbooks that may use it; a playbook that references a credential it
// is not granted is refused before it runs (shared/launch), and a name
// computed at run time is checked again where the value is read (Guard).

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/noetl/gcpengine/shared/errs"
)

// InlinePrefix starts a grant that matches inline playbooks (POST
// /executions {"playbook": ...}, which have no catalog path) by the
// principal that submitted them: "inline:<principal glob>".
const InlinePrefix = "inline:"

// MaxGrants bounds the grants of one credential.
const MaxGrants = 64

// ErrNotGranted is wrapped by every refusal of a credential to a
// playbook it is not granted to (*NotGrantedError). Code
// PermissionDenied: not retried (it fails until the credential's grants
// name the playbook).
var ErrNotGranted = errs.Sentinel(errs.PermissionDenied, "credentials: not granted")

// Grantee is what a credential's grants are matched against: where the
// execution's playbook came from. It is decided by the engine, never by
// the playbook: metadata.path is the author's to choose, so it does not
// count.
type Grantee struct {
	// Path is the playbook's catalog path, or its file under the
	// playbook root (shared/catalog Entry.Path); "" for an inline
	// playbook.
	Path string
	// Creator is the principal that started the execution (shared/auth;
	// engine.State.Creator): inline grants match it.
	Creator string
}

// String names the grantee in messages: `playbook "examples/x.yaml"` or
// `inline playbooks of "alice@example.com"`.
func (g Grantee) String() string {
	if g.Path != "" {
		return fmt.Sprintf("playbook %q", g.Path)
	}
	if g.Creator == "" {
		return "inline playbooks of no recorded principal"
	}
	return fmt.Sprintf("inline playbooks of %q", g.Creator)
}

// ValidateGrant checks one grant pattern; the error wraps ErrInvalid.
//
//   - "<glob>": catalog paths and playbook files, e.g. "examples/*",
//     "tests/fixtures/**", "examples/keychain.yaml", "**" (every
//     catalog playbook; no inline one). Globs are doublestar's: `*`
//     within a segment, `**` across segments, `?`, `[...]`, `{a,b}`.
//     Relative, '/'-separated, without "." or ".." segments.
//   - "inline:<glob>": inline playbooks submitted by a matching principal
//     (case-insensitive), e.g. "inline:token" (the local stack's static
//     token), "inline:*@example.com", "inline:*" (any caller allowed to
//     start executions).
func ValidateGrant(g string) error {
	if strings.TrimSpace(g) != g || g == "" {
		return invalidf("grant %q: empty or surrounded by spaces", g)
	}
	if p, ok := strings.CutPrefix(g, InlinePrefix); ok {
		if p == "" || strings.Contains(p, "/") || !doublestar.ValidatePattern(p) {
			return invalidf("grant %q: want inline:<principal glob> (e.g. inline:token, inline:*@example.com)", g)
		}
		return nil
	}
	if strings.HasPrefix(g, "/") || strings.Contains(g, "\\") || strings.ContainsRune(g, 0) {
		return invalidf("grant %q: a playbook path pattern is relative and '/'-separated (e.g. examples/*)", g)
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return invalidf("grant %q: empty, \".\" or \"..\" path segment", g)
		}
	}
	if !doublestar.ValidatePattern(g) {
		return invalidf("grant %q: not a valid glob", g)
	}
	return nil
}

// validateGrants checks a credential's grants.
func validateGrants(grants []string) []error {
	var errs []error
	if len(grants) > MaxGrants {
		errs = append(errs, invalidf("at most %d grants, got %d", MaxGrants, len(grants)))
	}
	for _, g := range grants {
		if err := ValidateGrant(g); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Granted reports whether one of grants matches g: a path glob matches a
// grantee with a Path (the cleaned path, with or without its .yaml/.yml
// extension), an inline glob a grantee without one whose Creator is set.
// Invalid patterns match nothing.
func Granted(grants []string, g Grantee) bool {
	for _, pat := range grants {
		if p, ok := strings.CutPrefix(pat, InlinePrefix); ok {
			if g.Path == "" && g.Creator != "" {
				if m, err := doublestar.Match(strings.ToLower(p), strings.ToLower(g.Creator)); err == nil && m {
					return true
				}
			}
			continue
		}
		if g.Path == "" {
			continue
		}
		for _, subject := range subjects(g.Path) {
			if m, err := doublestar.Match(pat, subject); err == nil && m {
				return true
			}
		}
	}
	return false
}

// subjects are the names a playbook path is matched under: the cleaned
// path, and without its .yaml/.yml extension. A path leaving its root
// (absolute, or "..") matches nothing.
func subjects(p string) []string {
	c := path.Clean(p)
	if c == "." || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") {
		return nil
	}
	out := []string{c}
	for _, ext := range []string{".yaml", ".yml"} {
		if s, ok := strings.CutSuffix(c, ext); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// NotGrantedError refuses a credential to a grantee.
type NotGrantedError struct {
	// Credential is the credential's name.
	Credential string
	// Grantee is who asked.
	Grantee Grantee
	// Grants are the credential's grants (the rule that refused).
	Grants []string
}

// Error implements error: it names the credential, the grantee and the
// grants.
func (e *NotGrantedError) Error() string {
	rule := "it has no grants: no playbook may use it"
	if len(e.Grants) > 0 {
		rule = "its grants are " + strings.Join(e.Grants, ", ")
	}
	return fmt.Sprintf("credential %q is not granted to %s (%s; grant it with `noetl credentials set %s ... --grant PATTERN`)", e.Credential, e.Grantee, rule, e.Credential)
}

// Unwrap returns ErrNotGranted.
func (e *NotGrantedError) Unwrap() error { return ErrNotGranted }

type granteeKey struct{}

// WithGrantee returns ctx carrying the grantee whose credentials Guard
// resolves (the engine sets it for each unit and each execution start).
func WithGrantee(ctx context.Context, g Grantee) context.Context {
	return context.WithValue(ctx, granteeKey{}, g)
}

// GranteeOf returns the grantee ctx carries (ok=false when none).
func GranteeOf(ctx context.Context) (Grantee, bool) {
	g, ok := ctx.Value(granteeKey{}).(Grantee)
	return g, ok
}

// Check returns nil when the credential summarised by info is granted
// to g, else a *NotGrantedError.
func Check(info Summary, g Grantee) error {
	if Granted(info.Grants, g) {
		return nil
	}
	return &NotGrantedError{Credential: info.Name, Grantee: g, Grants: info.Grants}
}

// Guard returns a Store whose CredentialGet gives a credential's values
// only to the grantee the context carries (WithGrantee): it reads the
// credential's metadata first (CredentialInfo) and refuses with a
// *NotGrantedError, without reading the values, when the grants do not
// match, and refuses every read from a context without a grantee (fail
// closed). The engine hands a guarded store to the tools and the
// keychain, so a credential name computed at run time is checked where
// it is read. Its other methods are s's.
func Guard(s Store) Store { return guarded{s} }

type guarded struct{ Store }

// CredentialGet implements Store (see Guard).
func (g guarded) CredentialGet(ctx context.Context, name string) (*Credential, error) {
	who, ok := GranteeOf(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: credential %q read outside an execution (no grantee in the context)", ErrNotGranted, name)
	}
	info, err := g.Store.CredentialInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := Check(*info, who); err != nil {
		return nil, err
	}
	return g.Store.CredentialGet(ctx, name)
}
