package launch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
)

// Grantee returns the grantee of an execution's credentials
// (credentials.Grantee): its catalog path, or, for an inline playbook,
// the principal that started it. Units set it in their context
// (credentials.WithGrantee) so that a Guard store checks every credential
// a task reads.
func Grantee(st *engine.State) credentials.Grantee {
	return credentials.Grantee{Path: st.CatalogPath, Creator: st.Creator}
}

// CredentialRef is a credential a playbook names literally outside its
// keychain.
type CredentialRef struct {
	// Name is the credential's name.
	Name string
	// Where is the YAML path that names it (e.g. "workflow[2].tool[0].auth").
	Where string
}

// CredentialRefs lists the credentials a playbook names literally (a
// constant, valid credential name, not a template) outside its keychain:
// `auth:` of any task (and of a transfer's source and target, or any
// nested mapping), `credential:` fields, `script.source.auth`,
// `loop.cursor.auth`, and the names a `secrets` task reads from the
// credential provider (`name`/`key`/`secret`/`secret_name`/`credential`,
// or each `map` value's credential part). Names computed by templates are
// not listed: they are checked where they are read (credentials.Guard).
// The keychain is resolved, and so checked, by Keychain. Sorted by name,
// then path.
func CredentialRefs(pb *dsl.Playbook) []CredentialRef {
	var out []CredentialRef
	add := func(v any, where string) {
		s, ok := v.(string)
		s = strings.TrimSpace(s)
		if !ok || s == "" || strings.Contains(s, "{{") || strings.Contains(s, "{%") || credentials.ValidateName(s) != nil {
			return
		}
		out = append(out, CredentialRef{Name: s, Where: where})
	}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "auth", "credential":
					add(e, where+"."+k)
				}
				walk(e, where+"."+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", where, i))
			}
		}
	}
	task := func(t *dsl.Task, where string) {
		if t == nil {
			return
		}
		if t.Path != "" {
			where = t.Path
		}
		walk(t.Config, where)
		walk(t.Input, where+".input")
		if t.Script != nil {
			add(t.Script.Auth, where+".script.source.auth")
		}
		if t.Kind == "secrets" {
			provider := "credential"
			if p, ok := t.Config["provider"].(string); ok {
				provider = strings.ToLower(strings.TrimSpace(p))
			}
			if provider == "credential" || provider == "credentials" || provider == "store" || provider == "keychain" || provider == "noetl" {
				for _, k := range []string{"name", "key", "secret", "secret_name"} {
					add(t.Config[k], where+"."+k)
				}
				if m, ok := t.Config["map"].(map[string]any); ok {
					for f, ref := range m {
						if s, ok := ref.(string); ok {
							name, _, _ := strings.Cut(strings.TrimSpace(s), ".")
							add(name, where+".map."+f)
						}
					}
				}
			}
		}
	}
	for _, s := range pb.Workflow {
		for i, t := range s.Tasks {
			task(t, fmt.Sprintf("workflow.%s.tool[%d]", s.Name, i))
		}
		if s.Loop != nil && s.Loop.Cursor != nil {
			add(s.Loop.Cursor.Auth, fmt.Sprintf("workflow.%s.loop.cursor.auth", s.Name))
		}
	}
	for name, t := range pb.Workbook {
		task(t, "workbook."+name)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Where < out[j].Where
	})
	return out
}

// GrantError refuses an execution whose playbook names a credential it
// is not granted (README "Security"); nothing was created.
type GrantError struct {
	// Ref is the reference refused.
	Ref CredentialRef
	// Err is the *credentials.NotGrantedError.
	Err error
}

// Error implements error: "<path>: credential "x" is not granted to ...".
func (e *GrantError) Error() string { return e.Ref.Where + ": " + e.Err.Error() }

// Unwrap returns the refusal (errors.Is credentials.ErrNotGranted).
func (e *GrantError) Unwrap() error { return e.Err }

// CheckGrants checks that every credential pb names literally
// (CredentialRefs) is granted to g, reading metadata only
// (CredentialInfo). A name that is not in the store is left to the task
// that reads it (it fails there, as before); a refusal is a *GrantError;
// a store failure is returned as is (transient).
func CheckGrants(ctx context.Context, s credentials.Store, pb *dsl.Playbook, g credentials.Grantee) error {
	refs := CredentialRefs(pb)
	if len(refs) == 0 {
		return nil
	}
	if s == nil {
		return fmt.Errorf("the playbook names credentials (%s at %s) but no credential store is configured", refs[0].Name, refs[0].Where)
	}
	checked := map[string]error{}
	for _, r := range refs {
		err, seen := checked[r.Name]
		if !seen {
			var info *credentials.Summary
			info, err = s.CredentialInfo(ctx, r.Name)
			switch {
			case errors.Is(err, credentials.ErrNotFound):
				err = nil
			case err == nil:
				err = credentials.Check(*info, g)
			}
			checked[r.Name] = err
		}
		if errors.Is(err, credentials.ErrNotGranted) {
			return &GrantError{Ref: r, Err: err}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
