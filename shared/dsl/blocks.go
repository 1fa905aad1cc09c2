package dsl

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file parses the constructs of NoETL's DSL v2 and of its newer
// models (NoETL DSL spec "DSL v2 names"; NoETL noetl_dsl_refactoring_spec.md,
// workflow_entry_routing_termination.md, result_storage.md and
// noetl/core/dsl/engine/models/*.py): set blocks with scoped targets,
// output blocks, script blocks, cursor loops with their frame policy, and
// the executor spec.

// setLevel says where a set block sits: it decides what a bare target
// (no ctx./iter./step. prefix) means.
type setLevel int

const (
	// setStep: step-level set and next.arcs[].set (a bare target is
	// written to ctx, with a warning, as NoETL's server does).
	setStep setLevel = iota
	// setTask: a composite tool item's set and a task policy's then.set (a
	// bare target is a ScopeVar variable of the step run).
	setTask
)

// setKeyRE is one segment of a set target's key.
var setKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// assignments parses a DSL v2 set block: a mapping of targets
// (ctx.x, iter.x, step.x, or a bare name) to values, in YAML order.
func (l *loader) assignments(n *yaml.Node, path, what string, level setLevel) []Assignment {
	d := l.mapping(n, path, what, "a mapping of targets (ctx.<name>, iter.<name>, step.<name>) to values")
	if d == nil {
		return nil
	}
	fs, _ := l.fields(d, path, what)
	var out []Assignment
	for _, e := range fs {
		ep := join(path, e.key)
		scope, key := "", e.key
		if i := strings.IndexByte(e.key, '.'); i >= 0 {
			switch e.key[:i] {
			case ScopeCtx, ScopeIter, ScopeStep:
				scope, key = e.key[:i], e.key[i+1:]
				if scope == ScopeIter && level == setStep {
					// A step's or an arc's set runs when the step run
					// ends, outside every iteration: there is no iter
					// scope to write (engine.ApplySet would fail the run).
					l.errf(e.k, ep, "%s target %q: the iter scope exists only while a loop iteration runs; set iter.<name> in a task's policy rule (then.set) or on a tool item, or use ctx.<name> or step.<name> here", what, e.key)
					continue
				}
			case "workload", "input", "output", "outcome", "args", "keychain", "event":
				l.errf(e.k, ep, "%s target %q writes the read-only scope %s: set writes ctx.<name>, iter.<name> or step.<name>", what, e.key, e.key[:i])
				continue
			}
		}
		if scope == "" {
			switch level {
			case setStep:
				if strings.Contains(key, ".") {
					l.errf(e.k, ep, "%s target %q has an unknown scope %q: write ctx.<name>, iter.<name> or step.<name>", what, e.key, key[:strings.IndexByte(key, '.')])
					continue
				}
				l.warnf(e.k, ep, "%s target %q has no scope: written to ctx (write ctx.%s)", what, e.key, e.key)
				scope = ScopeCtx
			default:
				scope = ScopeVar
				if strings.Contains(key, ".") {
					l.errf(e.k, ep, "%s target %q has an unknown scope %q: write ctx.<name>, iter.<name>, step.<name> or a bare name (a variable of this step run)", what, e.key, key[:strings.IndexByte(key, '.')])
					continue
				}
			}
		}
		if !validSetKey(key) {
			l.errf(e.k, ep, "%s target %q: the name after the scope must be one or more identifiers separated by dots", what, e.key)
			continue
		}
		out = append(out, Assignment{Scope: scope, Key: key, Value: l.value(e.v, ep), Line: e.k.Line, Path: ep})
	}
	return out
}

func validSetKey(key string) bool {
	if key == "" {
		return false
	}
	for _, seg := range strings.Split(key, ".") {
		if !setKeyRE.MatchString(seg) {
			return false
		}
	}
	return true
}

// patch parses a v10 set_ctx / set_iter mapping into assignments of one
// scope (each top-level key is one target, its value as written).
func (l *loader) patch(n *yaml.Node, path, what, scope string) []Assignment {
	d := l.mapping(n, path, what, "a mapping")
	if d == nil {
		return nil
	}
	fs, _ := l.fields(d, path, what)
	out := make([]Assignment, 0, len(fs))
	for _, e := range fs {
		ep := join(path, e.key)
		if e.key == "" {
			l.errf(e.k, ep, "%s key must not be empty", what)
			continue
		}
		out = append(out, Assignment{Scope: scope, Key: e.key, Value: l.value(e.v, ep), Line: e.k.Line, Path: ep})
	}
	return out
}

// checkAssignments reports a target written twice in one node (set and
// set_ctx/set_iter together, or the same key twice through different
// spellings).
func (l *loader) checkAssignments(as []Assignment) {
	seen := map[string]Assignment{}
	for _, a := range as {
		t := a.Target()
		if a.Scope == ScopeVar {
			t = "var:" + t
		}
		if first, dup := seen[t]; dup {
			l.problems = append(l.problems, Problem{Line: a.Line, Path: a.Path, Message: fmt.Sprintf("target %s is written twice in the same block (first at line %d)", a.Target(), first.Line)})
			continue
		}
		seen[t] = a
	}
}

// ---- input ----------------------------------------------------------------

// input handles the args/input pair of a step or task: v10 args and DSL v2
// input are the same thing, so only one may be given.
func (l *loader) input(cur map[string]any, have *string, e entry, path, what string) map[string]any {
	if *have != "" && *have != e.key {
		l.errf(e.k, join(path, e.key), "%s has both %s and %s: they are the same (DSL v2 input is v10 args); keep one", what, *have, e.key)
		return cur
	}
	*have = e.key
	return l.dict(e.v, join(path, e.key), what+" "+e.key)
}

// ---- output ---------------------------------------------------------------

// StoreTiers maps NoETL's output.store kinds to this stack's result tiers
// (NoETL result storage RFC; NoETL result_storage.md): auto keeps small results inline and
// puts larger ones in the GCS results tier; memory and eventlog keep the
// result inline (this stack has no per-process store: the execution state
// is the fastest tier); kv (NoETL's NATS KV), disk and its deprecated alias
// object, and gcs all become the GCS results tier, the only object store
// here. Kinds missing from the map (s3, db, duckdb) have no tier here and
// are rejected by Load (UnsupportedStores says what they would need).
var StoreTiers = map[string]string{
	"auto":     TierAuto,
	"memory":   TierInline,
	"eventlog": TierInline,
	"kv":       TierGCS,
	"disk":     TierGCS,
	"object":   TierGCS,
	"gcs":      TierGCS,
}

// UnsupportedStores names what each NoETL store kind without a tier here
// would need.
var UnsupportedStores = map[string]string{
	"s3":     "an AWS S3 bucket (this stack stores large results in GCS: use kind gcs or auto)",
	"db":     "NoETL's PostgreSQL result_store table (this stack stores large results in GCS: use kind gcs or auto)",
	"duckdb": "a DuckDB result database (this stack stores large results in GCS: use kind gcs or auto)",
}

var outputKeys = []string{"store", "select", "output_select", "accumulate", "inline_max_bytes", "preview_max_bytes", "scope", "as"}

// output parses an output block (tool.output or step.output).
func (l *loader) output(n *yaml.Node, path string) *Output {
	o := &Output{Line: l.lineFor(deref(n), path), Path: path}
	if !l.walk(n, path, "output", func(e entry, ep string) {
		switch e.key {
		case "store":
			o.Store = l.store(e.v, ep, o)
		case "select", "output_select":
			o.Select = append(o.Select, l.selects(e.v, ep)...)
		case "accumulate":
			o.Accumulate = l.accumulate(e.v, ep)
		case "inline_max_bytes", "preview_max_bytes":
			if i, ok := l.nonNegativeInt(e, ep, "output."+e.key); ok {
				v := i
				if e.key == "inline_max_bytes" {
					if o.InlineMaxBytes != nil {
						l.errf(e.k, ep, "output.inline_max_bytes is given twice (here and under store)")
					}
					o.InlineMaxBytes = &v
				} else {
					o.PreviewMaxBytes = &v
				}
			}
		case "scope":
			if s, ok := l.choiceOf(e, ep, "output.scope", "step", "execution", "workflow", "permanent"); ok {
				o.Scope = s
			}
		case "as":
			if s, ok := l.ident(e, ep, "output.as"); ok {
				o.As = s
			}
		default:
			l.errf(e.k, ep, "unknown output key %q (allowed: %s)", e.key, strings.Join(outputKeys, ", "))
		}
	}) {
		return nil
	}
	return o
}

var storeKeys = []string{"kind", "driver", "bucket", "prefix", "ttl", "compression", "credential", "inline_max_bytes"}

func (l *loader) store(n *yaml.Node, path string, o *Output) *OutputStore {
	st := &OutputStore{Kind: "auto"}
	if !l.walk(n, path, "output.store", func(e entry, ep string) {
		switch e.key {
		case "kind":
			st.Kind, _ = l.str(e.v, ep, "output.store.kind")
		case "driver":
			st.Driver, _ = l.str(e.v, ep, "output.store.driver")
		case "bucket":
			st.Bucket, _ = l.str(e.v, ep, "output.store.bucket")
			l.warnf(e.k, ep, "output.store.bucket is not used: a result's object key and bucket derive from its URI and the deployment's cell map (NOETL_RESULT_CELLS_FILE), so any reader finds it without a lookup")
		case "prefix":
			st.Prefix, _ = l.str(e.v, ep, "output.store.prefix")
			l.warnf(e.k, ep, "output.store.prefix is not used: a result's object key derives from its URI and the deployment's cell map, so any reader finds it without a lookup")
		case "ttl":
			if s, ok := l.str(e.v, ep, "output.store.ttl"); ok {
				if _, err := ParseTTL(s); err != nil {
					l.errf(e.k, ep, "output.store.ttl: %v", err)
				}
				st.TTL = s
			}
		case "credential":
			st.Credential, _ = l.str(e.v, ep, "output.store.credential")
		case "compression":
			if s, ok := l.str(e.v, ep, "output.store.compression"); ok {
				switch s {
				case "none", "lz4", "zstd":
					st.Compression = s
				case "gzip":
					// NoETL's spelling of a general-purpose codec: Arrow IPC
					// (the Feather files of the results tier) has lz4 and
					// zstd only.
					st.Compression = "zstd"
					l.warnf(e.k, ep, "output.store.compression gzip: Feather results are compressed with zstd (Arrow IPC has no gzip codec)")
				default:
					l.errf(e.k, ep, "output.store.compression must be none, lz4 or zstd (Arrow IPC codecs), got %q", s)
				}
			}
		case "inline_max_bytes":
			if i, ok := l.nonNegativeInt(e, ep, "output.store.inline_max_bytes"); ok {
				if o.InlineMaxBytes != nil {
					l.errf(e.k, ep, "inline_max_bytes is given twice (output and output.store)")
				}
				v := i
				o.InlineMaxBytes = &v
			}
		default:
			l.errf(e.k, ep, "unknown output.store key %q (allowed: %s)", e.key, strings.Join(storeKeys, ", "))
		}
	}) {
		return nil
	}
	st.Tier = StoreTiers[st.Kind]
	return st
}

var selectPathRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\[[0-9]+\])*(\.[A-Za-z_][A-Za-z0-9_-]*(\[[0-9]+\])*|\.[0-9]+)*$`)

// selects parses output.select / output_select: a list of field paths or of
// {path, as} mappings.
func (l *loader) selects(n *yaml.Node, path string) []OutputSelect {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind == yaml.MappingNode && !looksLikeUnquotedTemplate(d) {
		// NoETL fixtures write output_select: {strategy: size_threshold,
		// threshold_kb: 100}; NoETL's extract_output_select iterates a
		// mapping's keys as field paths, which select nothing
		// (noetl/core/storage/extractor.py): ignored here too.
		l.warnf(n, path, "output select as a mapping (keys %s) selects nothing in NoETL either (it reads the keys as field paths): ignored; to keep fields inline write a list of field paths, e.g. [status, data.count] or [{path: data.count, as: count}]; the inline size budget is output.inline_max_bytes", strings.Join(keysOf(l.peekFields(d)), ", "))
		return nil
	}
	if d.Kind != yaml.SequenceNode {
		l.errf(n, path, "output select must be a list of field paths (e.g. [status, data.count]) or of {path, as}, got %s%s", describe(d), templateHint(d))
		return nil
	}
	var out []OutputSelect
	for i, item := range d.Content {
		ip := idx(path, i)
		var sel OutputSelect
		di := deref(item)
		if di != nil && di.Kind == yaml.MappingNode {
			fs, _ := l.fields(di, ip, "a select entry")
			for _, e := range fs {
				switch e.key {
				case "path":
					sel.Path, _ = l.str(e.v, join(ip, "path"), "select path")
				case "as":
					sel.As, _ = l.str(e.v, join(ip, "as"), "select as")
				default:
					l.errf(e.k, join(ip, e.key), "unknown select key %q (allowed: path, as)", e.key)
				}
			}
		} else if s, ok := l.str(item, ip, "a select entry"); ok {
			sel.Path = s
		} else {
			continue
		}
		sel.Path = strings.TrimPrefix(strings.TrimSpace(sel.Path), "$.")
		if !selectPathRE.MatchString(sel.Path) {
			l.errf(item, ip, "select path %q must be a dotted field path like data.items[0].name", sel.Path)
			continue
		}
		if sel.As == "" {
			last := sel.Path[strings.LastIndexByte(sel.Path, '.')+1:]
			if i := strings.IndexByte(last, '['); i >= 0 {
				last = last[:i]
			}
			sel.As = last
		}
		if !isIdent(sel.As) {
			l.errf(item, ip, "select name %q must be an identifier (give as: <name>)", sel.As)
			continue
		}
		out = append(out, sel)
	}
	return out
}

var accumulateKeys = []string{"enabled", "strategy", "merge_path", "manifest_as", "on_success", "on_error", "max_items"}

func (l *loader) accumulate(n *yaml.Node, path string) *OutputAccumulate {
	a := &OutputAccumulate{Strategy: "append", OnSuccess: true}
	if !l.walk(n, path, "output.accumulate", func(e entry, ep string) {
		switch e.key {
		case "enabled":
			a.Enabled, _ = l.boolean(e.v, ep, "accumulate.enabled")
		case "on_success":
			a.OnSuccess, _ = l.boolean(e.v, ep, "accumulate.on_success")
		case "on_error":
			a.OnError, _ = l.boolean(e.v, ep, "accumulate.on_error")
		case "strategy":
			if s, ok := l.choiceOf(e, ep, "accumulate.strategy", "append", "replace", "merge", "concat"); ok {
				a.Strategy = s
			}
		case "merge_path":
			a.MergePath, _ = l.str(e.v, ep, "accumulate.merge_path")
		case "manifest_as":
			if s, ok := l.ident(e, ep, "accumulate.manifest_as"); ok {
				a.ManifestAs = s
			}
		case "max_items":
			if i, ok := l.nonNegativeInt(e, ep, "accumulate.max_items"); ok {
				a.MaxItems = i
			}
		default:
			l.errf(e.k, ep, "unknown accumulate key %q (allowed: %s)", e.key, strings.Join(accumulateKeys, ", "))
		}
	}) {
		return nil
	}
	return a
}

// ---- script ---------------------------------------------------------------

// scriptSources are the script.source.type values this stack loads.
var scriptSources = []string{"inline", "file", "http", "gcs", "s3"}

// script parses a task's script: {uri, source: {type, code, endpoint,
// method, auth, timeout}} block (NoETL noetl/core/script, noetl-tools
// PythonScript).
func (l *loader) script(n *yaml.Node, path string) *Script {
	sc := &Script{Line: l.lineFor(deref(n), path), Path: path}
	var srcLine *yaml.Node
	if !l.walk(n, path, "script", func(e entry, ep string) {
		switch e.key {
		case "uri":
			sc.URI, _ = l.str(e.v, ep, "script.uri")
		case "source":
			srcLine = e.k
			l.walk(e.v, ep, "script.source", func(se entry, sp string) {
				if l.strField(se, sp, "script.source", map[string]*string{
					"type": &sc.Source, "code": &sc.Code, "endpoint": &sc.Endpoint, "method": &sc.Method, "region": &sc.Region,
				}) {
					return
				}
				switch se.key {
				case "auth", "credential":
					sc.Auth, _ = l.str(se.v, sp, "script.source."+se.key)
				case "timeout":
					if f, ok := l.num(se.v, sp, "script.source.timeout (seconds)"); ok {
						if f < 0 {
							l.errf(se.k, sp, "script.source.timeout must be ≥ 0")
						}
						sc.TimeoutS = f
					}
				default:
					l.errf(se.k, sp, "unknown script.source key %q (allowed: type, code, endpoint, method, auth, timeout, region)", se.key)
				}
			})
		default:
			l.errf(e.k, ep, "unknown script key %q (allowed: uri, source)", e.key)
		}
	}) {
		return nil
	}
	if sc.Source == "" {
		if sc.Code == "" {
			l.errf(srcLine, join(path, "source.type"), "script.source.type is required (one of %s)", strings.Join(scriptSources, ", "))
		}
		sc.Source = "inline"
	}
	switch sc.Source {
	case "inline":
		if strings.TrimSpace(sc.Code) == "" {
			l.errf(srcLine, join(path, "source.code"), "an inline script needs script.source.code")
		}
	case "file", "gcs":
		if strings.TrimSpace(sc.URI) == "" {
			l.errf(deref(n), join(path, "uri"), "a %s script needs script.uri", sc.Source)
		} else if sc.Source == "gcs" && !strings.HasPrefix(sc.URI, "gs://") && !strings.Contains(sc.URI, "{{") {
			l.errf(deref(n), join(path, "uri"), "a gcs script's uri must look like gs://bucket/path/to/script, got %q", clip(sc.URI))
		}
	case "http":
		if strings.TrimSpace(sc.URI) == "" && strings.TrimSpace(sc.Endpoint) == "" {
			l.errf(deref(n), join(path, "uri"), "an http script needs script.source.endpoint or script.uri")
		}
		switch strings.ToUpper(sc.Method) {
		case "", "GET", "POST", "PUT", "DELETE", "PATCH":
		default:
			l.errf(srcLine, join(path, "source.method"), "script.source.method must be an HTTP method, got %q", sc.Method)
		}
	case "s3":
		if strings.TrimSpace(sc.URI) == "" {
			l.errf(deref(n), join(path, "uri"), "an s3 script needs script.uri (s3://bucket/key)")
		} else if !strings.HasPrefix(sc.URI, "s3://") && !strings.Contains(sc.URI, "{{") {
			l.errf(deref(n), join(path, "uri"), "an s3 script's uri must look like s3://bucket/path/to/script, got %q", clip(sc.URI))
		}
	default:
		l.errf(srcLine, join(path, "source.type"), "unknown script.source.type %q (one of %s)", sc.Source, strings.Join(scriptSources, ", "))
	}
	return sc
}

// ---- cursor loops ---------------------------------------------------------

// CursorKinds are the cursor drivers this stack runs (Cursor.Kind).
var CursorKinds = []string{"postgres"}

// unsupportedCursors names what NoETL's other cursor drivers need.
var unsupportedCursors = map[string]string{
	"mysql":       "a MySQL server",
	"snowflake":   "a Snowflake account",
	"redis":       "a Redis server",
	"nats_stream": "a NATS JetStream stream driver, not implemented here",
}

func (l *loader) cursor(n *yaml.Node, path string) *Cursor {
	fs, ok := l.fields(n, path, "loop.cursor")
	if !ok {
		return nil
	}
	c := &Cursor{Kind: "postgres", Line: l.lineFor(deref(n), path), Path: path}
	m := index(fs)
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "kind":
			c.Kind, _ = l.str(e.v, ep, "loop.cursor.kind")
		case "auth":
			c.Auth, _ = l.str(e.v, ep, "loop.cursor.auth")
		case "claim":
			c.Claim, _ = l.str(e.v, ep, "loop.cursor.claim")
		case "options":
			c.Options = l.dict(e.v, ep, "loop.cursor.options")
		default:
			l.errf(e.k, ep, "unknown loop.cursor key %q (allowed: kind, auth, claim, options)", e.key)
		}
	}
	if _, ok := m["claim"]; !ok {
		l.errf(deref(n), join(path, "claim"), "loop.cursor needs claim: the statement that leases up to {{ __frame_max_rows }} rows and returns them (nothing when drained)")
	}
	if _, ok := m["auth"]; !ok {
		l.errf(deref(n), join(path, "auth"), "loop.cursor needs auth: the credential of the claim connection")
	}
	return c
}

var frameKeys = []string{"max_rows", "max_seconds", "max_bytes", "lease_seconds", "heartbeat_seconds", "row_concurrency", "process", "verify_ipc", "retry_mode", "max_attempts"}

// frame parses loop.spec.frame; defaults are NoETL FramePolicy's.
func (l *loader) frame(n *yaml.Node, path string) *Frame {
	f := defaultFrame()
	def := defaultFrame()
	// templated reports (and records) a numeric field written as a
	// template; the field keeps its default until the loop starts.
	templated := func(e entry, p string) bool {
		d := deref(e.v)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() != "!!str" || !strings.Contains(d.Value, "{{") {
			return false
		}
		if f.Templates == nil {
			f.Templates = map[string]string{}
		}
		f.Templates[e.key] = d.Value
		return true
	}
	posInt := func(e entry, p string, min int, cur int) int {
		if templated(e, p) {
			return cur
		}
		i, ok := l.integer(e.v, p, "frame."+e.key)
		if ok && i < min {
			l.errf(e.k, p, "frame.%s must be ≥ %d, got %d", e.key, min, i)
		}
		return i
	}
	posNum := func(e entry, p string, cur float64) float64 {
		if templated(e, p) {
			return cur
		}
		v, ok := l.num(e.v, p, "frame."+e.key+" (seconds)")
		if ok && !(v > 0) {
			l.errf(e.k, p, "frame.%s must be > 0, got %g", e.key, v)
		}
		return v
	}
	if !l.walk(n, path, "loop.spec.frame", func(e entry, ep string) {
		switch e.key {
		case "max_rows":
			f.MaxRows = posInt(e, ep, 1, def.MaxRows)
		case "max_bytes":
			f.MaxBytes = posInt(e, ep, 1, def.MaxBytes)
		case "row_concurrency":
			f.RowConcurrency = posInt(e, ep, 1, def.RowConcurrency)
		case "max_attempts":
			f.MaxAttempts = posInt(e, ep, 1, def.MaxAttempts)
		case "max_seconds":
			f.MaxSeconds = posNum(e, ep, def.MaxSeconds)
		case "lease_seconds":
			f.LeaseSeconds = posNum(e, ep, def.LeaseSeconds)
		case "heartbeat_seconds":
			f.HeartbeatSeconds = posNum(e, ep, def.HeartbeatSeconds)
		case "verify_ipc":
			f.VerifyIPC, _ = l.boolean(e.v, ep, "frame.verify_ipc")
		case "process":
			l.choice(&f.Process, e, ep, "frame.process", false, "frame.process must be row or frame, got %q", "row", "frame")
		case "retry_mode":
			l.choice(&f.RetryMode, e, ep, "frame.retry_mode", false, "frame.retry_mode must be whole_frame, got %q", "whole_frame")
		default:
			l.errf(e.k, ep, "unknown frame key %q (allowed: %s)", e.key, strings.Join(frameKeys, ", "))
		}
	}) {
		return nil
	}
	return f
}

// defaultFrame is NoETL FramePolicy's defaults.
func defaultFrame() *Frame {
	return &Frame{MaxRows: 1, MaxSeconds: 30, MaxBytes: 64 << 20, LeaseSeconds: 120, HeartbeatSeconds: 30, RowConcurrency: 1, Process: "row", RetryMode: "whole_frame", MaxAttempts: 3}
}

// maxInFlight reads loop.spec.max_in_flight: a literal integer or a
// template.
func (l *loader) maxInFlight(lp *Loop, e entry, p string) {
	d := deref(e.v)
	if d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!str" {
		s := strings.TrimSpace(d.Value)
		if i, err := strconv.Atoi(s); err == nil {
			if i < 1 {
				l.errf(e.k, p, "max_in_flight must be at least 1, got %d", i)
			}
			lp.MaxInFlight, lp.MaxInFlightTemplate = i, ""
			return
		}
		if strings.Contains(s, "{{") {
			lp.MaxInFlight, lp.MaxInFlightTemplate = 0, d.Value
			return
		}
		l.errf(e.k, p, "max_in_flight must be an integer ≥ 1 or a template rendering to one (e.g. \"{{ workload.max_in_flight }}\"), got %q", clip(s))
		return
	}
	if d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!float" {
		var f float64
		if err := d.Decode(&f); err == nil && f == math.Trunc(f) && f >= 1 && f < 1<<31 {
			lp.MaxInFlight, lp.MaxInFlightTemplate = int(f), ""
			return
		}
	}
	if i, ok := l.integer(e.v, p, "max_in_flight"); ok {
		if i < 1 {
			l.errf(e.k, p, "max_in_flight must be at least 1, got %d", i)
		}
		lp.MaxInFlight, lp.MaxInFlightTemplate = i, ""
	}
}

// ---- executor -------------------------------------------------------------

var executorSpecKeys = []string{"entry_step", "final_step", "no_next_is_error", "policy"}

// executor keeps the executor block verbatim and parses executor.spec's
// entry and termination keys (NoETL ExecutorSpecFull).
func (l *loader) executor(p *Playbook, n *yaml.Node, path string) {
	p.Executor = l.dict(n, path, "executor")
	l.walk(n, path, "executor", func(e entry, ep string) {
		switch e.key {
		case "profile":
			l.choice(nil, e, ep, "executor.profile", false, "executor.profile must be local, distributed or auto, got %q", "local", "distributed", "auto")
		case "version", "requires":
		case "spec":
			l.walk(e.v, ep, "executor.spec", func(se entry, sp string) {
				switch se.key {
				case "entry_step":
					p.Entry, _ = l.str(se.v, sp, "executor.spec.entry_step")
					if p.Entry == "" {
						l.errf(se.k, sp, "executor.spec.entry_step must name a step")
					}
				case "final_step":
					p.FinalStep, _ = l.str(se.v, sp, "executor.spec.final_step")
					if p.FinalStep == "" {
						l.errf(se.k, sp, "executor.spec.final_step must name a step")
					}
				case "no_next_is_error":
					p.NoNextIsError, _ = l.boolean(se.v, sp, "executor.spec.no_next_is_error")
				case "policy":
				default:
					// Spec layering: other keys are defaults merged under
					// step.spec / task.spec (NoETL DSL spec "Step" Spec).
				}
			})
		default:
			l.warnf(e.k, ep, "unknown executor key %q ignored (NoETL knows profile, version, requires, spec)", e.key)
		}
	})
}
