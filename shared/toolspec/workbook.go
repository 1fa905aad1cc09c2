package toolspec

// Workbook is the configuration of kind workbook: a call of a root
// workbook entry by name. Its other keys are the called entry's (they
// override the entry's values): the validator checks them against the
// entry's kind.
type Workbook struct {
	Name string `json:"name,omitempty" required:"name" doc:"The workbook entry to call."`
}

// Kind implements Spec.
func (Workbook) Kind() string { return "workbook" }
