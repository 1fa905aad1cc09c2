package execute

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/config"
)

// TestDeliveryFromSettings: the queue's budget the handler hands the
// worker's last-attempt guard (worker.Delivery.MaxAttempts and
// MaxBackoff, whose effect shared/worker's
// TestLostLastAttemptsAreFiledByTheGuard shows) follows
// NOETL_TASKS_MAX_ATTEMPTS and NOETL_TASKS_MAX_BACKOFF_S; the task's name
// and retry count come from Cloud Tasks' headers.
func TestDeliveryFromSettings(t *testing.T) {
	env := map[string]string{"NOETL_SIGNING_KEY": "execute-test-key-0123456789abcdef0123456789", "NOETL_TASKS_MAX_ATTEMPTS": "7", "NOETL_TASKS_MAX_BACKOFF_S": "42"}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("X-CloudTasks-TaskName", "projects/p/locations/l/queues/work/tasks/t1")
	r.Header.Set("X-CloudTasks-TaskRetryCount", "3")
	d := deliveryOf(r, &cfg)
	if d.MaxAttempts != 7 || d.MaxBackoff != 42*time.Second || d.RetryCount != 3 || d.TaskName != "projects/p/locations/l/queues/work/tasks/t1" {
		t.Fatalf("delivery %+v, want 7 attempts, 42 s backoff, retry 3 and the task's name", d)
	}
	def, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok && k == "NOETL_SIGNING_KEY" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := deliveryOf(r, &def); got.MaxAttempts == 7 || got.MaxBackoff == 42*time.Second {
		t.Fatalf("the defaults' delivery %+v carries the test's settings", got)
	}
}
