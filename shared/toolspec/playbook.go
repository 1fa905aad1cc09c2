package toolspec

// Playbook is the configuration of kind playbook: a child playbook started and awaited (noetl-tools PlaybookConfig).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type Playbook struct {
	Path         string         `json:"path,omitempty" required:"path" doc:"The child playbook's catalog path."`
	CatalogID    any            `json:"catalog_id,omitempty" required:"path" doc:"The child's catalog id."`
	Version      any            `json:"version,omitempty" doc:"The child's catalog version (default the latest)."`
	Workload     map[string]any `json:"workload,omitempty" doc:"The child's workload, merged with the task's input."`
	Payload      any            `json:"payload,omitempty" doc:"NoETL's spelling of the child's workload."`
	ReturnStep   any            `json:"return_step,omitempty" doc:"The child step whose result is the task's result."`
	ReturnResult any            `json:"return_result,omitempty" doc:"NoETL: return the child's result."`
	ResultStep   any            `json:"result_step,omitempty" doc:"NoETL's spelling of return_step."`
	PollInterval any            `json:"poll_interval,omitempty" doc:"NoETL: how often the parent polls the child."`
	Task         any            `json:"task,omitempty" doc:"NoETL fixtures' task label."`
}

// Kind implements Spec.
func (Playbook) Kind() string { return "playbook" }
