package cloudtasks

import (
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Resource-name grammar of Cloud Tasks v2:
//
//	projects/PROJECT_ID/locations/LOCATION_ID
//	projects/PROJECT_ID/locations/LOCATION_ID/queues/QUEUE_ID
//	projects/PROJECT_ID/locations/LOCATION_ID/queues/QUEUE_ID/tasks/TASK_ID
//
// PROJECT_ID may contain letters, digits, hyphens, colons and periods
// (domain-scoped projects), QUEUE_ID letters, digits and hyphens (1..100),
// TASK_ID letters, digits, hyphens and underscores (1..500).
var (
	locationRe = regexp.MustCompile(`^projects/([A-Za-z0-9.:-]+)/locations/([A-Za-z0-9_-]+)$`)
	queueRe    = regexp.MustCompile(`^(projects/[A-Za-z0-9.:-]+/locations/[A-Za-z0-9_-]+)/queues/([A-Za-z0-9-]{1,100})$`)
	taskRe     = regexp.MustCompile(`^(projects/[A-Za-z0-9.:-]+/locations/[A-Za-z0-9_-]+/queues/[A-Za-z0-9-]{1,100})/tasks/([^/]*)$`)
	taskIDRe   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
	cmekRe     = regexp.MustCompile(`^(projects/[A-Za-z0-9.:-]+/locations/[A-Za-z0-9_-]+)/(?i:cmekConfig)$`)
)

const (
	msgQueueNameFormat = `Queue name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/queues/<QUEUE_ID>".`
	msgTaskNameFormat  = `Task name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/queues/<QUEUE_ID>/tasks/<TASK_ID>".`
	msgParentFormat    = `Parent must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>".`
	msgQueueNotFound   = "Queue does not exist. If you just created the queue, wait at least a minute for the queue to initialize."
	msgNotFound        = "Requested entity was not found."
	msgTaskTombstoned  = "The task no longer exists, though a task with this name existed recently. The task either successfully completed or was deleted."
	msgTaskExists      = "Requested entity already exists"
	msgQueueExists     = "Queue already exists"
	msgQueueRecent     = "The queue cannot be created because a queue with this name existed too recently."
)

// withHelp attaches an errdetails.Help link to an InvalidArgument status, the
// way the real service does for malformed resource names.
func withHelp(msg, desc, url string) error {
	st := status.New(codes.InvalidArgument, msg)
	if d, err := st.WithDetails(&errdetails.Help{Links: []*errdetails.Help_Link{{Description: desc, Url: url}}}); err == nil {
		return d.Err()
	}
	return st.Err()
}

func errQueueName() error {
	return withHelp(msgQueueNameFormat, "Definition of queue name",
		"https://cloud.google.com/tasks/docs/reference/rest/v2/projects.locations.queues#Queue.FIELDS.name")
}

func errTaskID(id string) error {
	return withHelp(fmt.Sprintf("Task ID %q can contain only letters ([A-Za-z]), numbers ([0-9]), hyphens (-), or underscores (_). Task ID must between 1 and 500 characters.", id),
		"Definition of task ID",
		"https://cloud.google.com/tasks/docs/reference/rest/v2/projects.locations.queues.tasks#Task.FIELDS.name")
}

// parseLocation validates "projects/P/locations/L".
func parseLocation(name string) error {
	if !locationRe.MatchString(name) {
		return status.Error(codes.InvalidArgument, msgParentFormat)
	}
	return nil
}

// parseQueueName validates a queue resource name and returns its parent
// (projects/P/locations/L) and short queue ID.
func parseQueueName(name string) (parent, id string, err error) {
	m := queueRe.FindStringSubmatch(name)
	if m == nil {
		return "", "", errQueueName()
	}
	return m[1], m[2], nil
}

// parseTaskName validates a task resource name and returns the queue name and
// short task ID.
func parseTaskName(name string) (queueName, id string, err error) {
	m := taskRe.FindStringSubmatch(name)
	if m == nil {
		return "", "", status.Error(codes.InvalidArgument, msgTaskNameFormat)
	}
	if !taskIDRe.MatchString(m[2]) {
		return "", "", errTaskID(m[2])
	}
	return m[1], m[2], nil
}

// shortName returns the last path segment of a resource name.
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
