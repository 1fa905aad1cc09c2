package toolspec

// Noop is the configuration of kind noop: a task that does nothing and
// succeeds (routing steps, tests; noetl-tools NoopConfig).
type Noop struct {
	Message string `json:"message,omitempty" doc:"A note: returned as the result's message when no result is given (NoETL logs it)."`
	Result  any    `json:"result,omitempty" doc:"The task's result, returned as is (default: the task's input when it has any, else null)."`
}

// Kind implements Spec.
func (Noop) Kind() string { return "noop" }
