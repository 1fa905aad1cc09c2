package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfigDefaults(t *testing.T) {
	root := t.TempDir()
	c, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root}))
	if err != nil {
		t.Fatal(err)
	}
	if c.StackDir != filepath.Join(root, ".stack") || c.Project != "noetl-local" || c.Location != "us-central1" {
		t.Errorf("config %+v", c)
	}
	ports := map[string]int{}
	for _, p := range c.Ports() {
		ports[p.EnvVar] = p.Port
	}
	want := map[string]int{"NOETL_PUBSUB_PORT": 8681, "NOETL_FIRESTORE_PORT": 8682, "NOETL_GCS_PORT": 8683,
		"NOETL_TASKS_PORT": 8684, "NOETL_FIXTURES_PORT": 8685, "NOETL_FUNCTIONS_PORT": 8680, "NOETL_PG_PORT": 55432, "NOETL_NATS_PORT": 8686,
		"NOETL_KAFKA_PORT": 8691, "NOETL_S3_PORT": 8692}
	for k, v := range want {
		if ports[k] != v {
			t.Errorf("%s = %d, want %d", k, ports[k], v)
		}
	}
	if c.WorkConcurrency != 200 || c.PushConcurrency != 32 || c.PushMaxAttempts != 10 ||
		c.PushMinBackoff != 200*time.Millisecond || c.PushMaxBackoff != 10*time.Second || c.Fixtures.FailRate != 0.2 {
		t.Errorf("knobs %+v", c)
	}
	env := map[string]string{}
	for _, kv := range c.Env() {
		env[kv.Key] = kv.Value
	}
	for k, v := range map[string]string{
		"PUBSUB_EMULATOR_HOST":     "127.0.0.1:8681",
		"FIRESTORE_EMULATOR_HOST":  "127.0.0.1:8682",
		"STORAGE_EMULATOR_HOST":    "http://127.0.0.1:8683",
		"CLOUDTASKS_EMULATOR_HOST": "127.0.0.1:8684",
		"NOETL_FUNCTIONS_URL":      "http://127.0.0.1:8680",
		"NOETL_FIXTURES_URL":       "http://127.0.0.1:8685",
		"NOETL_PG_DSN":             "postgres://noetl@127.0.0.1:55432/noetl?sslmode=disable",
		"NOETL_RESULTS_BUCKET":     "noetl-results",
		"NATS_URL":                 "nats://127.0.0.1:8686",
		"NOETL_KAFKA_BROKERS":      "127.0.0.1:8691",
		"NOETL_S3_URL":             "http://127.0.0.1:8692",
		"NOETL_REPO_ROOT":          root,
		"GOOGLE_CLOUD_PROJECT":     "noetl-local",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
}

func TestLoadConfigOverridesAndErrors(t *testing.T) {
	root := t.TempDir()
	c, err := LoadConfig(envFrom(map[string]string{
		"NOETL_REPO_ROOT": root, "NOETL_STACK_DIR": filepath.Join(root, "st"), "GOOGLE_CLOUD_PROJECT": "p1",
		"NOETL_PUBSUB_PORT": "9681", "NOETL_PUSH_MIN_BACKOFF": "10ms", "NOETL_LOG_LEVEL": "debug",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PubSubPort != 9681 || c.Project != "p1" || c.StackDir != filepath.Join(root, "st") || c.PushMinBackoff != 10*time.Millisecond {
		t.Errorf("config %+v", c)
	}
	_, err = LoadConfig(envFrom(map[string]string{
		"NOETL_REPO_ROOT": root, "NOETL_GCS_PORT": "8681", "NOETL_PG_PORT": "x", "NOETL_FIXTURE_FAIL_RATE": "3", "NOETL_LOG_LEVEL": "loud",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"NOETL_PUBSUB_PORT and NOETL_GCS_PORT are both 8681", "NOETL_PG_PORT", "NOETL_FIXTURE_FAIL_RATE", "NOETL_LOG_LEVEL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEnvFileSourcesInShell(t *testing.T) {
	root := filepath.Join(t.TempDir(), "it's a dir")
	c, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root}))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(f, []byte(c.EnvFileContent()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `. "$1" && printf '%s|%s' "$NOETL_REPO_ROOT" "$NOETL_PG_DSN"`, "sh", f).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := root + "|" + c.PGDSN(); string(out) != want {
		t.Errorf("sourced %q, want %q", out, want)
	}
}

func TestFindRepoRoot(t *testing.T) {
	wd, _ := os.Getwd()
	root, err := FindRepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "emulators", "stack", "sql", "001_subdivisions.sql")); err != nil {
		t.Errorf("root %s: %v", root, err)
	}
	if _, err := FindRepoRoot(t.TempDir()); err == nil {
		t.Error("found a root in an empty directory")
	}
}

// The stack generates its signing key and api token once into the stack
// directory (mode 0600), reuses them on restart, exports both, and lets
// the environment override them.
func TestEnsureSecrets(t *testing.T) {
	root := t.TempDir()
	c, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.StackDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureSecrets(); err != nil {
		t.Fatal(err)
	}
	if len(c.SigningKey) != 64 || len(c.APIToken) != 64 || c.SigningKey == c.APIToken {
		t.Fatalf("generated secrets: key %d chars, token %d chars", len(c.SigningKey), len(c.APIToken))
	}
	for _, f := range []string{c.SigningKeyFile(), c.APITokenFile()} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v, want 0600", f, err, fi.Mode().Perm())
		}
	}
	again, _ := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root}))
	if err := again.EnsureSecrets(); err != nil || again.SigningKey != c.SigningKey || again.APIToken != c.APIToken {
		t.Fatal("a restarted stack must keep its key and token")
	}
	env := map[string]string{}
	for _, kv := range again.Env() {
		env[kv.Key] = kv.Value
	}
	if env["NOETL_SIGNING_KEY"] != c.SigningKey || env["NOETL_API_TOKEN"] != c.APIToken {
		t.Error(".stack/env must export NOETL_SIGNING_KEY and NOETL_API_TOKEN")
	}
	set, _ := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root, "NOETL_API_TOKEN": "from-the-environment-0123456789abcdef"}))
	if err := set.EnsureSecrets(); err != nil || set.APIToken != "from-the-environment-0123456789abcdef" || set.SigningKey != c.SigningKey {
		t.Errorf("environment must win: %q", set.APIToken)
	}
}

// The runner's environment is built from scratch: its knobs, no engine
// secret, no emulator host, no cloud identity, whatever the supervisor's
// environment holds; its egress policy allows the user-data services and
// denies the engine's endpoints.
func TestRunnerEnv(t *testing.T) {
	t.Setenv("NOETL_SIGNING_KEY", "k-0123456789012345678901234567890123456789")
	t.Setenv("NOETL_API_TOKEN", "t-0123456789012345678901234567890123456789")
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/root/key.json")
	t.Setenv("NOETL_SANDBOX_MEMORY_MB", "256")
	t.Setenv("NOETL_SANDBOX_CGROUP", "/from/supervisor")
	t.Setenv("NOETL_PYTHON_WARM_INTERPRETERS", "3")
	t.Setenv("NOETL_PYTHON_ZYGOTE", "false")
	t.Setenv("NOETL_HTTP_ALLOW_LINK_LOCAL", "true")
	c, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	env := c.RunnerEnv("/sys/fs/cgroup/memory/delegated")
	joined := strings.Join(env, "\n")
	for _, bad := range []string{"NOETL_SIGNING_KEY", "NOETL_API_TOKEN", "EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "NOETL_RUNNER_TOKEN_KEY_FILE", "NOETL_PG_DSN", "/from/supervisor"} {
		if strings.Contains(joined, bad) {
			t.Errorf("the runner's environment has %s", bad)
		}
	}
	for _, want := range []string{"NOETL_SANDBOX_MEMORY_MB=256", "NOETL_PYTHON_WARM_INTERPRETERS=3", "NOETL_PYTHON_ZYGOTE=false", "NOETL_HTTP_ALLOW_LINK_LOCAL=true", "NOETL_SANDBOX_CGROUP=/sys/fs/cgroup/memory/delegated", "NOETL_RUNNER_AUDIENCE=" + c.RunnerURL(),
		"NOETL_RUNNER_JWKS_FILE=" + c.RunnerJWKSFile(), "NOETL_EGRESS_PROFILE=local", ownerEnv + "=" + c.StackDir} {
		if !strings.Contains(joined, want) {
			t.Errorf("the runner's environment lacks %s", want)
		}
	}
	allow := strings.Join(c.EgressAllow(), ",")
	deny := strings.Join(c.EgressDeny(), ",")
	for _, p := range []int{c.FirestorePort, c.PubSubPort, c.GCSPort, c.TasksPort, c.FunctionsPort, c.RunnerPort} {
		if strings.Contains(allow, hostPort(p)) || !strings.Contains(deny, hostPort(p)) {
			t.Errorf("engine endpoint %s: allowed or not denied", hostPort(p))
		}
	}
	for _, p := range []int{c.PGPort, c.NATSPort, c.DataGCSPort, c.DataPubSubPort, c.KafkaPort, c.S3Port, c.FixturesPort} {
		if !strings.Contains(allow, hostPort(p)) {
			t.Errorf("user-data service %s is not allowed", hostPort(p))
		}
	}
	if c.RunnerUID < 1000 || c.RunnerUID == 0 {
		t.Errorf("runner uid %d", c.RunnerUID)
	}
}

// NOETL_EGRESS_ALLOW (scripts/up --allow) adds the developer's own
// destinations to the stack's allow-list for both planes (the runner's
// environment and the functions'), without repeats of the stack's own
// entries; a rule naming one of the engine's own endpoints is refused with
// the component it is, whatever form it takes.
func TestDevEgressAllow(t *testing.T) {
	root := t.TempDir()
	base, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root}))
	if err != nil {
		t.Fatal(err)
	}
	pg := hostPort(base.PGPort)
	c, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root, "NOETL_EGRESS_ALLOW": "127.0.0.1:9000, 10.0.0.0/8," + pg + ",127.0.0.1:9000,localhost:9001,127.0.0.1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:9000", "10.0.0.0/8", "localhost:9001", "127.0.0.1"}
	if strings.Join(c.DevEgressAllow, ",") != strings.Join(want, ",") {
		t.Errorf("DevEgressAllow = %q, want %q", c.DevEgressAllow, want)
	}
	full := strings.Join(c.EgressAllow(), ",")
	if full != strings.Join(base.EgressAllow(), ",")+","+strings.Join(want, ",") {
		t.Errorf("EgressAllow = %s", full)
	}
	runner := strings.Join(c.RunnerEnv(""), "\n")
	if !strings.Contains(runner, "\nNOETL_EGRESS_ALLOW="+full+"\n") {
		t.Errorf("the runner's environment lacks NOETL_EGRESS_ALLOW=%s", full)
	}
	found := false
	for _, v := range c.Env() {
		if v.Key == "NOETL_EGRESS_ALLOW" {
			found = v.Value == full
		}
	}
	if !found {
		t.Errorf("the functions' environment lacks NOETL_EGRESS_ALLOW=%s", full)
	}
	for _, bad := range []struct{ rule, what string }{
		{hostPort(base.FunctionsPort), "functions"},
		{"localhost:" + strconv.Itoa(base.FirestorePort), "Firestore emulator"},
		{"0.0.0.0:" + strconv.Itoa(base.RunnerPort), "runner"},
		{"[::1]:" + strconv.Itoa(base.TasksPort), "Cloud Tasks emulator"},
		{"127.0.0.2:" + strconv.Itoa(base.PubSubPort), "Pub/Sub emulator"},
		{"127.0.0.1:99999", "port"},
	} {
		_, err := LoadConfig(envFrom(map[string]string{"NOETL_REPO_ROOT": root, "NOETL_EGRESS_ALLOW": "127.0.0.1:9000," + bad.rule}))
		if err == nil || !strings.Contains(err.Error(), bad.rule) || !strings.Contains(err.Error(), bad.what) {
			t.Errorf("NOETL_EGRESS_ALLOW=%s: %v, want an error naming %q", bad.rule, err, bad.what)
		}
	}
}
