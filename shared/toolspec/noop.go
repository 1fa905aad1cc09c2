package toolspec

// Noop is the configuration of kind noop: a task that does nothing and
// succeeds (routing steps, tests; noetl-tools NoopConfig).
type Noop struct {
	Message any `json:"message,omitempty" ignored:"a noop task logs nothing: its result is result: (else its input)" doc:"NoETL: a note the noop task logs."`
	Result  any `json:"result,omitempty" doc:"The task's result, returned as is (default: the task's input when it has any, else null; result: null is the same as no result)."`
}

// Kind implements Spec.
func (Noop) Kind() string { return "noop" }
