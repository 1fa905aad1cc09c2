// Package terraform holds the offline checks of the Terraform deployment in
// this directory: the HCL is parsed with hashicorp/hcl and compared, in
// both directions, with shared/deploy (the names, APIs and IAM table the
// code uses) and shared/config (the environment the code reads), and the
// deployment documentation with both. The provider schemas are checked by
// scripts/check-terraform (terraform validate with the providers built
// from their Go modules).
package terraform

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/deploy"
)

// module is the parsed Terraform of this directory.
type module struct {
	t      *testing.T
	src    map[string][]byte // file name → bytes
	blocks []*hclsyntax.Block
	locals map[string]*hclsyntax.Attribute
}

func load(t *testing.T) *module {
	t.Helper()
	files, err := filepath.Glob("*.tf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files: %v", err)
	}
	m := &module{t: t, src: map[string][]byte{}, locals: map[string]*hclsyntax.Attribute{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, diags := hclsyntax.ParseConfig(b, f, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", f, diags.Error())
		}
		m.src[f] = b
		body := file.Body.(*hclsyntax.Body)
		if len(body.Attributes) > 0 {
			t.Errorf("%s: top-level attributes are not Terraform", f)
		}
		for _, blk := range body.Blocks {
			m.blocks = append(m.blocks, blk)
			if blk.Type == "locals" {
				for name, a := range blk.Body.Attributes {
					if _, dup := m.locals[name]; dup {
						t.Errorf("local %s declared twice", name)
					}
					m.locals[name] = a
				}
			}
		}
	}
	return m
}

// resource returns the one resource (or data source, kind "data") block
// typ.name.
func (m *module) resource(kind, typ, name string) *hclsyntax.Block {
	m.t.Helper()
	var found []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == kind && len(b.Labels) == 2 && b.Labels[0] == typ && b.Labels[1] == name {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		m.t.Fatalf("%s %s.%s declared %d times, want once", kind, typ, name, len(found))
	}
	return found[0]
}

// variable returns the block of variable name.
func (m *module) variable(name string) *hclsyntax.Block {
	m.t.Helper()
	for _, b := range m.blocks {
		if b.Type == "variable" && b.Labels[0] == name {
			return b
		}
	}
	m.t.Fatalf("variable %s is not declared", name)
	return nil
}

// varDefault evaluates the default of variable name.
func (m *module) varDefault(name string) cty.Value {
	m.t.Helper()
	a, ok := m.variable(name).Body.Attributes["default"]
	if !ok {
		m.t.Fatalf("variable %s has no default", name)
	}
	return m.static(a.Expr)
}

// text is the source text of a node.
func (m *module) text(r hcl.Range) string {
	return string(r.SliceBytes(m.src[r.Filename]))
}

// attr returns the source text of attribute name of body b ("" if absent).
func (m *module) attr(b *hclsyntax.Body, name string) string {
	if a, ok := b.Attributes[name]; ok {
		return m.text(a.Expr.Range())
	}
	return ""
}

// child returns the nested block typ of b (nil if absent).
func child(b *hclsyntax.Body, typ string) *hclsyntax.Block {
	for _, c := range b.Blocks {
		if c.Type == typ {
			return c
		}
	}
	return nil
}

// static evaluates a constant expression.
func (m *module) static(e hclsyntax.Expression) cty.Value {
	m.t.Helper()
	v, diags := e.Value(nil)
	if diags.HasErrors() {
		m.t.Fatalf("%s: not a constant: %s", m.text(e.Range()), diags.Error())
	}
	return v
}

// local evaluates the constant local name.
func (m *module) local(name string) cty.Value {
	m.t.Helper()
	a, ok := m.locals[name]
	if !ok {
		m.t.Fatalf("local.%s is not declared", name)
	}
	return m.static(a.Expr)
}

func strs(v cty.Value) []string {
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// sameSet reports a difference between what the code declares (want) and
// what Terraform declares (got), naming both directions.
func sameSet(t *testing.T, what string, want, got []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s %q is used by the code (shared/deploy) but missing from Terraform", what, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s %q is declared in Terraform but unused by the code (not in shared/deploy)", what, g)
		}
	}
}

func TestFunctions(t *testing.T) {
	m := load(t)
	fns := m.local("functions").AsValueMap()
	var want, got []string
	for _, f := range deploy.Functions {
		want = append(want, f.Name)
		v, ok := fns[f.Name]
		if !ok {
			continue
		}
		attrs := v.AsValueMap()
		if attrs["trigger"].AsString() != string(f.Trigger) || attrs["invokers"].AsString() != f.Invokers {
			t.Errorf("function %s: Terraform trigger/invokers %s/%s, code %s/%s", f.Name, attrs["trigger"].AsString(), attrs["invokers"].AsString(), f.Trigger, f.Invokers)
		}
		sub := ""
		if s, ok := attrs["subscription"]; ok {
			sub = s.AsString()
		}
		if sub != f.Subscription {
			t.Errorf("function %s: Terraform subscription %q, code %q", f.Name, sub, f.Subscription)
		}
	}
	for k := range fns {
		got = append(got, k)
	}
	sameSet(t, "function", want, got)

	fn := m.resource("resource", "google_cloudfunctions2_function", "fn")
	if m.attr(fn.Body, "for_each") != "local.functions" || m.attr(fn.Body, "name") != `"noetl-${each.key}"` {
		t.Errorf("google_cloudfunctions2_function.fn must be for_each = local.functions, name = noetl-<entry point>")
	}
	bc := child(fn.Body, "build_config")
	if bc == nil || m.attr(bc.Body, "entry_point") != "each.key" || m.attr(bc.Body, "runtime") != "var.go_runtime" {
		t.Fatalf("build_config must set entry_point = each.key (the functions-framework name) and runtime = var.go_runtime")
	}
	if m.attr(bc.Body, "service_account") != "google_service_account.build.id" {
		t.Error("builds must run as google_service_account.build")
	}
	if child(fn.Body, "event_trigger") != nil {
		t.Error("functions must not use Eventarc triggers: explicit push subscriptions deliver to them")
	}
	// One source for all: the storage object of the zip.
	src := child(child(bc.Body, "source").Body, "storage_source")
	if src == nil || m.attr(src.Body, "object") != "google_storage_bucket_object.source.name" {
		t.Error("every function must build from the one source zip (google_storage_bucket_object.source)")
	}
	sc := child(fn.Body, "service_config")
	for _, a := range []string{"available_memory", "available_cpu", "timeout_seconds", "max_instance_request_concurrency", "min_instance_count", "max_instance_count"} {
		if !strings.Contains(m.attr(sc.Body, a), "local.function_settings[each.key]") {
			t.Errorf("service_config.%s must come from local.function_settings (var.functions)", a)
		}
	}
	if m.attr(sc.Body, "service_account_email") != "google_service_account.fn[each.key].email" {
		t.Error("each function must run as its own service account")
	}
	if m.attr(sc.Body, "environment_variables") != "local.env" {
		t.Error("functions must get local.env")
	}
}

// TestRuntimeMatchesGoMod checks the default Go runtime against go.mod's
// go directive (go 1.26.x → go126).
func TestRuntimeMatchesGoMod(t *testing.T) {
	m := load(t)
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mm := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(b))
	if mm == nil {
		t.Fatal("go.mod has no go directive")
	}
	if got, want := m.varDefault("go_runtime").AsString(), "go"+mm[1]+mm[2]; got != want {
		t.Errorf("default go_runtime %s, want %s for go.mod's go %s.%s", got, want, mm[1], mm[2])
	}
}

func TestTopicsAndSubscriptions(t *testing.T) {
	m := load(t)
	sameSet(t, "topic", deploy.Topics, strs(m.local("topics")))
	topic := m.resource("resource", "google_pubsub_topic", "topic")
	if m.attr(topic.Body, "for_each") != "toset(local.topics)" || m.attr(topic.Body, "name") != "each.value" {
		t.Error("google_pubsub_topic.topic must be for_each = toset(local.topics), name = each.value")
	}

	push := m.local("push_subscriptions").AsValueMap()
	inspect := m.local("inspect_subscriptions").AsValueMap()
	var wantPush, wantPull, gotPush, gotPull []string
	for _, s := range deploy.Subscriptions {
		if s.Push == "" {
			wantPull = append(wantPull, s.Name)
			if v, ok := inspect[s.Name]; ok && v.AsString() != s.Topic {
				t.Errorf("subscription %s: Terraform topic %s, code %s", s.Name, v.AsString(), s.Topic)
			}
			continue
		}
		wantPush = append(wantPush, s.Name)
		v, ok := push[s.Name]
		if !ok {
			continue
		}
		a := v.AsValueMap()
		got := [4]string{a["topic"].AsString(), a["filter"].AsString(), a["function"].AsString(), a["dead_letter_topic"].AsString()}
		if want := [4]string{s.Topic, s.Filter, s.Push, s.DeadLetterTopic}; got != want {
			t.Errorf("subscription %s: Terraform (topic, filter, function, dead letter) %q, code %q", s.Name, got, want)
		}
	}
	for k := range push {
		gotPush = append(gotPush, k)
	}
	for k := range inspect {
		gotPull = append(gotPull, k)
	}
	sameSet(t, "push subscription", wantPush, gotPush)
	sameSet(t, "pull subscription", wantPull, gotPull)

	p := m.resource("resource", "google_pubsub_subscription", "push")
	if m.attr(p.Body, "for_each") != "local.push_subscriptions" || m.attr(p.Body, "name") != "each.key" ||
		m.attr(p.Body, "filter") != "each.value.filter" || m.attr(p.Body, "enable_message_ordering") != "false" {
		t.Error("google_pubsub_subscription.push must be for_each = local.push_subscriptions with name, filter from it and no ordering")
	}
	pc := child(p.Body, "push_config")
	if pc == nil || child(pc.Body, "oidc_token") == nil ||
		m.attr(child(pc.Body, "oidc_token").Body, "service_account_email") != "google_service_account.push.email" {
		t.Error("push subscriptions must authenticate with an OIDC token of google_service_account.push")
	} else if ep := m.attr(pc.Body, "push_endpoint"); !strings.Contains(ep, `google_cloudfunctions2_function.fn[each.value.function]`) || !strings.Contains(ep, "/projects/${var.project}/topics/${each.value.topic}") {
		t.Errorf("push endpoint %s must be the function's URL with the topic path functions-framework expects", ep)
	}
	dl := child(p.Body, "dead_letter_policy")
	if dl == nil || m.attr(dl.Body, "dead_letter_topic") != "google_pubsub_topic.topic[each.value.dead_letter_topic].id" {
		t.Error("push subscriptions need a dead-letter policy to their -dead topic")
	}
	if child(p.Body, "retry_policy") == nil {
		t.Error("push subscriptions need a retry policy")
	}
	in := m.resource("resource", "google_pubsub_subscription", "inspect")
	if m.attr(in.Body, "for_each") != "local.inspect_subscriptions" || child(in.Body, "push_config") != nil {
		t.Error("google_pubsub_subscription.inspect must be pull subscriptions over local.inspect_subscriptions")
	}
	// The route filter is the manifest's, character for character.
	if deploy.RouteFilter != push["route"].AsValueMap()["filter"].AsString() {
		t.Errorf("route filter differs from deploy.RouteFilter")
	}
}

func TestQueues(t *testing.T) {
	m := load(t)
	sameSet(t, "queue", deploy.Queues, strs(m.local("queues")))
	q := m.resource("resource", "google_cloud_tasks_queue", "queue")
	if m.attr(q.Body, "for_each") != "toset(local.queues)" || m.attr(q.Body, "name") != "each.value" {
		t.Error("google_cloud_tasks_queue.queue must be for_each = toset(local.queues), name = each.value")
	}
	for _, b := range []string{"rate_limits", "retry_config"} {
		if child(q.Body, b) == nil {
			t.Errorf("queues need %s", b)
		}
	}
	ht := child(q.Body, "http_target")
	if ht == nil || child(ht.Body, "oidc_token") == nil ||
		m.attr(child(ht.Body, "oidc_token").Body, "service_account_email") != "google_service_account.tasks.email" ||
		m.attr(child(ht.Body, "oidc_token").Body, "audience") != `local.run_url["execute"]` {
		t.Error("queues must attach an OIDC token of google_service_account.tasks for execute")
	}
	var configured []string
	for k := range m.varDefault("queues").AsValueMap() {
		configured = append(configured, k)
	}
	sameSet(t, "queue with rate limits", deploy.Queues, configured)
}

func TestServiceAccounts(t *testing.T) {
	m := load(t)
	for name, want := range map[string]string{"tasks": deploy.TasksServiceAccount, "push": deploy.PushServiceAccount} {
		sa := m.resource("resource", "google_service_account", name)
		if got := m.static(sa.Body.Attributes["account_id"].Expr).AsString(); got != want {
			t.Errorf("service account %s: account_id %q, code %q", name, got, want)
		}
	}
	fn := m.resource("resource", "google_service_account", "fn")
	if m.attr(fn.Body, "for_each") != "local.functions" || m.attr(fn.Body, "account_id") != `"noetl-${each.key}"` {
		t.Error("one service account per function: for_each = local.functions, account_id noetl-<name>")
	}
	// Invokers: execute only by the tasks account, push functions only by
	// the push account, api/emit only by var.api_invokers (no allUsers).
	inv := m.text(m.locals["invoker_members"].Expr.Range())
	for _, s := range []string{`["api", "emit"], var.api_invokers`, `"execute/tasks"`, `google_service_account.tasks.member`, `google_service_account.push.member`, `if f.invokers == "push"`} {
		if !strings.Contains(inv, s) {
			t.Errorf("local.invoker_members lacks %s", s)
		}
	}
	for f, src := range m.src {
		if strings.Contains(string(src), `"allUsers"`) || strings.Contains(string(src), `"allAuthenticatedUsers"`) {
			t.Errorf("%s grants a public principal: the api requires authenticated invokers", f)
		}
	}
}

func TestFirestore(t *testing.T) {
	m := load(t)
	var wantTTL []string
	wantExempt := map[string][]string{}
	for _, c := range deploy.Collections {
		if c.TTLField != "" {
			wantTTL = append(wantTTL, c.Group)
		}
		if len(c.LargeFields) > 0 {
			wantExempt[c.Group] = c.LargeFields
		}
	}
	sameSet(t, "collection with TTL", wantTTL, strs(m.local("ttl_collections")))
	gotExempt := m.local("exempt_fields").AsValueMap()
	var wantEx, gotEx []string
	for c, fs := range wantExempt {
		for _, f := range fs {
			wantEx = append(wantEx, c+"."+f)
		}
	}
	for c, fs := range gotExempt {
		for _, f := range strs(fs) {
			gotEx = append(gotEx, c+"."+f)
		}
	}
	sameSet(t, "index-exempt field", wantEx, gotEx)

	ttl := m.resource("resource", "google_firestore_field", "ttl")
	if m.attr(ttl.Body, "for_each") != "toset(local.ttl_collections)" || m.static(ttl.Body.Attributes["field"].Expr).AsString() != deploy.TTLField ||
		child(ttl.Body, "ttl_config") == nil {
		t.Errorf("google_firestore_field.ttl must put a TTL policy on %s of every local.ttl_collections", deploy.TTLField)
	}
	ex := m.resource("resource", "google_firestore_field", "exempt")
	if !strings.Contains(m.attr(ex.Body, "for_each"), "local.exempt_fields") || child(ex.Body, "index_config") == nil {
		t.Error("google_firestore_field.exempt must exempt local.exempt_fields from indexing")
	}

	var wantIx, gotIx []string
	for _, ix := range deploy.Indexes {
		s := ix.Collection + ":"
		for _, f := range ix.Fields {
			s += " " + f.Path + " " + f.Order
		}
		wantIx = append(wantIx, s)
	}
	for _, v := range m.local("indexes").AsValueMap() {
		a := v.AsValueMap()
		s := a["collection"].AsString() + ":"
		for _, f := range a["fields"].AsValueSlice() {
			s += " " + strings.Join(strs(f), " ")
		}
		gotIx = append(gotIx, s)
	}
	sameSet(t, "composite index", wantIx, gotIx)
	if ix := m.resource("resource", "google_firestore_index", "index"); m.attr(ix.Body, "for_each") != "local.indexes" {
		t.Error("google_firestore_index.index must iterate local.indexes")
	}
	m.resource("resource", "google_firestore_database", "default")
}

func TestBucketsAndSecrets(t *testing.T) {
	m := load(t)
	b := m.resource("resource", "google_storage_bucket", deploy.ResultsBucket)
	var actions []string
	for _, r := range b.Body.Blocks {
		if r.Type == "lifecycle_rule" {
			actions = append(actions, m.attr(child(r.Body, "action").Body, "type"))
		}
	}
	if !slices.Contains(actions, `"Delete"`) || !slices.Contains(actions, `"AbortIncompleteMultipartUpload"`) {
		t.Errorf("results bucket lifecycle actions %v, want Delete and AbortIncompleteMultipartUpload", actions)
	}
	s := m.resource("resource", "google_secret_manager_secret", "credential")
	if m.attr(s.Body, "secret_id") != `"`+deploy.SecretPrefix+`${each.value}"` {
		t.Errorf("keychain secrets must be named %s<credential>", deploy.SecretPrefix)
	}
}

// TestEnvironment checks the functions' environment against the config
// registry: every variable Terraform sets is a knob the code reads, every
// knob marked Deploy is set, and the names bound to resources point at the
// resources of the manifest.
func TestEnvironment(t *testing.T) {
	m := load(t)
	call, ok := m.locals["env"].Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "merge" || len(call.Args) != 2 || m.text(call.Args[1].Range()) != "var.extra_env" {
		t.Fatal("local.env must be merge({...}, var.extra_env)")
	}
	obj, ok := call.Args[0].(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatal("local.env's first argument must be an object")
	}
	env := map[string]string{}
	for _, it := range obj.Items {
		env[m.static(it.KeyExpr).AsString()] = m.text(it.ValueExpr.Range())
	}
	for k := range env {
		if _, ok := config.ByEnv(k); !ok {
			t.Errorf("Terraform sets %s, which the code does not read (not in shared/config)", k)
		}
	}
	for _, k := range config.Knobs() {
		if k.Deploy {
			if _, ok := env[k.Env]; !ok {
				t.Errorf("knob %s must be set by Terraform (Deploy in shared/config)", k.Env)
			}
		}
	}
	bound := map[string]string{
		"NOETL_EVENTS_TOPIC":               `google_pubsub_topic.topic["` + deploy.TopicEvents + `"].name`,
		"NOETL_COMMANDS_TOPIC":             `google_pubsub_topic.topic["` + deploy.TopicCommands + `"].name`,
		"NOETL_WORK_QUEUE":                 `google_cloud_tasks_queue.queue["` + deploy.QueueWork + `"].name`,
		"NOETL_TIMERS_QUEUE":               `google_cloud_tasks_queue.queue["` + deploy.QueueTimers + `"].name`,
		"NOETL_RESULTS_BUCKET":             `google_storage_bucket.` + deploy.ResultsBucket + `.name`,
		"NOETL_TASKS_SERVICE_ACCOUNT":      `google_service_account.tasks.email`,
		"NOETL_EXECUTE_URL":                `local.run_url["execute"]`,
		"NOETL_EXECUTE_AUDIENCE":           `local.run_url["execute"]`,
		"NOETL_API_AUDIENCES":              `join(",", [local.run_url["api"], local.run_url["emit"]])`,
		"NOETL_TASKS_MAX_ATTEMPTS":         `tostring(var.tasks_max_attempts)`,
		"NOETL_TASKS_MAX_BACKOFF_S":        `tostring(max(var.queues["work"].max_backoff_s, var.queues["timers"].max_backoff_s))`,
		"NOETL_PUSH_MAX_DELIVERY_ATTEMPTS": `tostring(var.push.max_delivery_attempts)`,
		"NOETL_DISPATCH_DEADLINE_S":        `tostring(var.dispatch_deadline_s)`,
		"NOETL_REPO_ROOT":                  `local.repo_root`,
		// infra/ (dashboards, alerts) queries the series the gcp exporter
		// lands in Cloud Monitoring (shared/telemetry cloudmonitoring.go).
		"NOETL_METRICS_EXPORTER": `"gcp"`,
		"GOOGLE_CLOUD_PROJECT":   `var.project`,
		"NOETL_LOCATION":         `var.region`,
	}
	for k, want := range bound {
		if got := env[k]; got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if m.text(m.locals["repo_root"].Expr.Range()) != `"/workspace/serverless_function_source_code"` {
		t.Error("NOETL_REPO_ROOT must be where the Go buildpack puts the source")
	}
	// Secret environment variables are secret knobs too: every function
	// gets the signing key, api and emit the optional static token.
	fn := m.resource("resource", "google_cloudfunctions2_function", "fn")
	sev := child(child(fn.Body, "service_config").Body, "dynamic")
	if sev == nil || sev.Labels[0] != "secret_environment_variables" || m.attr(sev.Body, "for_each") != "local.secret_env[each.key]" {
		t.Fatal("service_config lacks the dynamic secret_environment_variables block over local.secret_env[each.key]")
	}
	if m.attr(child(sev.Body, "content").Body, "key") != "secret_environment_variables.key" {
		t.Error("the secret environment variable's name must be local.secret_env's key")
	}
	se := m.text(m.locals["secret_env"].Expr.Range())
	if !strings.Contains(se, "for name in keys(local.functions)") {
		t.Error("local.secret_env must cover every function")
	}
	keys := regexp.MustCompile(`(NOETL_[A-Z0-9_]+)\s*=`).FindAllStringSubmatch(se, -1)
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k[1]] = true
		if kb, ok := config.ByEnv(k[1]); !ok || !kb.Secret {
			t.Errorf("secret environment variable %s is not a secret knob of shared/config", k[1])
		}
	}
	if !seen["NOETL_SIGNING_KEY"] || !strings.Contains(se, "NOETL_SIGNING_KEY = google_secret_manager_secret.signing_key.secret_id") {
		t.Error("every function must get NOETL_SIGNING_KEY from the signing key secret")
	}
	sk := m.resource("resource", "google_secret_manager_secret", "signing_key")
	if m.attr(sk.Body, "secret_id") != `"`+deploy.SigningKeySecret+`"` {
		t.Errorf("the signing key secret must be %s", deploy.SigningKeySecret)
	}
	if m.attr(m.resource("resource", "google_secret_manager_secret_iam_member", "signing_key").Body, "for_each") != "local.functions" {
		t.Error("every function must be able to read the signing key")
	}
}

// TestNothingUnused checks that every variable and local is referenced.
func TestNothingUnused(t *testing.T) {
	m := load(t)
	used := map[string]bool{}
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, a := range b.Attributes {
			for _, tr := range a.Expr.Variables() {
				if len(tr) < 2 {
					continue
				}
				if step, ok := tr[1].(hcl.TraverseAttr); ok {
					used[tr.RootName()+"."+step.Name] = true
				}
			}
		}
		for _, c := range b.Blocks {
			walk(c.Body)
		}
	}
	for _, b := range m.blocks {
		walk(b.Body)
	}
	for _, b := range m.blocks {
		if b.Type == "variable" && !used["var."+b.Labels[0]] {
			t.Errorf("variable %s is declared but unused", b.Labels[0])
		}
	}
	for name := range m.locals {
		if !used["local."+name] {
			t.Errorf("local %s is declared but unused", name)
		}
	}
}

// TestFunctionDefaults checks the default service settings the way Cloud
// Run does: more than one concurrent request needs at least one vCPU, and
// push functions answer within the 600 s Pub/Sub ack deadline.
func TestFunctionDefaults(t *testing.T) {
	m := load(t)
	defs := m.local("function_defaults").AsValueMap()
	var names []string
	for name, v := range defs {
		names = append(names, name)
		a := v.AsValueMap()
		cpu, _ := a["cpu"].AsBigFloat().Float64()
		conc, _ := a["concurrency"].AsBigFloat().Float64()
		timeout, _ := a["timeout_s"].AsBigFloat().Float64()
		if conc > 1 && cpu < 1 {
			t.Errorf("%s: concurrency %v with %v vCPU (Cloud Run needs 1 vCPU for concurrency > 1)", name, conc, cpu)
		}
		if f, ok := deploy.FunctionByName(name); ok && f.Trigger == deploy.TriggerPush && timeout > 600 {
			t.Errorf("%s: timeout %vs exceeds the push ack deadline", name, timeout)
		}
	}
	var want []string
	for _, f := range deploy.Functions {
		want = append(want, f.Name)
	}
	sameSet(t, "function with defaults", want, names)
	exec := defs["execute"].AsValueMap()
	timeout, _ := exec["timeout_s"].AsBigFloat().Float64()
	if dl, _ := m.varDefault("dispatch_deadline_s").AsBigFloat().Float64(); timeout < dl {
		t.Errorf("execute's default timeout %vs is below the default dispatch deadline %vs", timeout, dl)
	}
}

// TestSourceZipExcludes applies the archive's exclude patterns the way
// the archive provider does (doublestar matching on paths relative to the
// module root) and checks what the function source zip would hold.
func TestSourceZipExcludes(t *testing.T) {
	m := load(t)
	data := m.resource("data", "archive_file", "source")
	if m.attr(data.Body, "source_dir") != `"${path.module}/.."` {
		t.Fatal("the source zip must be the module root")
	}
	excludes := strs(m.static(data.Body.Attributes["excludes"].Expr))
	excluded := func(p string) bool {
		for _, e := range excludes {
			if match(e, p) {
				return true
			}
		}
		return false
	}
	for _, p := range []string{".git", ".stack", "bin", "terraform/.terraform", "terraform/.build", "terraform/terraform.tfstate", "terraform/terraform.tfstate.backup", "x/y/terraform.tfstate", "terraform/terraform.tfvars", "local", "noetl"} {
		if !excluded(p) {
			t.Errorf("%s would ship in the function source", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "gcpengine.go", "functions/api/api.go", "runner/kinds/python/runner.py", "examples", "cmd/local/main.go", "terraform/terraform.tfvars.example", "scripts/noetl"} {
		if excluded(p) {
			t.Errorf("%s would be missing from the function source", p)
		}
	}
}

// match is doublestar.PathMatch for the patterns used here: "**/" matches
// any number of leading directories; other segments use filepath.Match.
func match(pattern, name string) bool {
	ps, ns := strings.Split(pattern, "/"), strings.Split(name, "/")
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if i == len(ps) {
			return j == len(ns)
		}
		if ps[i] == "**" {
			for k := j; k <= len(ns); k++ {
				if rec(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(ns) {
			return false
		}
		ok, _ := filepath.Match(ps[i], ns[j])
		return ok && rec(i+1, j+1)
	}
	return rec(0, 0)
}

// TestMonitoringFromInfra checks that dashboards and alert policies come
// from infra/ and that the directories hold files.
func TestMonitoringFromInfra(t *testing.T) {
	m := load(t)
	if !strings.Contains(m.text(m.locals["dashboards_dir"].Expr.Range()), "/../infra/monitoring/dashboards") ||
		!strings.Contains(m.text(m.locals["alerts_dir"].Expr.Range()), "/../infra/monitoring/alerts") {
		t.Error("dashboards and alerts must be loaded from infra/monitoring")
	}
	for _, d := range []string{"../infra/monitoring/dashboards", "../infra/monitoring/alerts"} {
		if fs, _ := filepath.Glob(filepath.Join(d, "*.json")); len(fs) == 0 {
			t.Errorf("%s has no JSON files", d)
		}
	}
	m.resource("resource", "google_monitoring_dashboard", "dashboard")
	m.resource("resource", "google_monitoring_alert_policy", "policy")
}
