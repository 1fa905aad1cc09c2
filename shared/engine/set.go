package engine

import (
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
)

// SetTargets are the maps a `set` block writes into (NoETL DSL spec "DSL v2
// names": flat targets ctx.x, iter.x, step.x, and bare names at task
// level). A nil map means the scope is not writable where the block
// stands: an assignment to it is an error.
type SetTargets struct {
	Ctx  map[string]any
	Iter map[string]any
	Step map[string]any
	Var  map[string]any
}

// ApplySet renders every value of as in sc first (so all of them see the
// scopes as they were before the block), then writes them in order into
// the targets; a dotted key (ctx.a.b) writes a nested field, creating maps
// as needed (NoETL's set). The v10 set_ctx / set_iter forms arrive here
// normalised as ctx / iter assignments.
func ApplySet(as []dsl.Assignment, sc template.Scope, t SetTargets) error {
	if len(as) == 0 {
		return nil
	}
	vals := make([]any, len(as))
	for i, a := range as {
		v, err := template.RenderValue(a.Value, sc)
		if err != nil {
			return fmt.Errorf("set %s: %w", a.Target(), err)
		}
		vals[i] = v
	}
	for i, a := range as {
		var m map[string]any
		switch a.Scope {
		case dsl.ScopeCtx:
			m = t.Ctx
		case dsl.ScopeIter:
			m = t.Iter
		case dsl.ScopeStep:
			m = t.Step
		case dsl.ScopeVar, "":
			m = t.Var
		}
		if m == nil {
			return fmt.Errorf("set %s: the %s scope cannot be written here", a.Target(), a.Scope)
		}
		if err := setPath(m, a.Key, RefTarget(a.Key, vals[i])); err != nil { // _ref targets: views.go
			return fmt.Errorf("set %s: %w", a.Target(), err)
		}
	}
	return nil
}

// setPath writes v at the dotted path key inside m.
func setPath(m map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if m[p] != nil {
				return fmt.Errorf("%s is a %T, not a mapping", p, m[p])
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return nil
}
