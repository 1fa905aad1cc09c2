package toolspec

// Python is the configuration of kind python: python code run in the sandbox (noetl-tools PythonConfig; NoETL's python executor).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type Python struct {
	Code           string         `json:"code,omitempty" required:"code" doc:"The python source: its top-level names see the task's input; the result is its 'result' variable (or main()'s return)."`
	CodeB64        string         `json:"code_b64,omitempty" alias:"code_base64" required:"code" doc:"The source, base64-encoded UTF-8 text."`
	Script         any            `json:"script,omitempty" required:"code" doc:"A script block {path | uri | source: {type: file|gcs|http|inline, ...}} whose text is the source."`
	Libs           map[string]any `json:"libs,omitempty" doc:"Modules to import: alias → module (libs: {pd: pandas})."`
	Deps           any            `json:"deps,omitempty" doc:"NoETL: packages to install (packages are not installed at run time here)."`
	Packages       any            `json:"packages,omitempty" doc:"NoETL: packages to install (packages are not installed at run time here)."`
	Env            any            `json:"env,omitempty" doc:"NoETL: environment variables of the code."`
	Python         any            `json:"python,omitempty" doc:"NoETL: the interpreter to use."`
	Cwd            any            `json:"cwd,omitempty" doc:"NoETL: the working directory."`
	TimeoutSeconds any            `json:"timeout_seconds,omitempty" doc:"NoETL: the code's timeout in seconds."`
	Auth           any            `json:"auth,omitempty" doc:"NoETL: credentials the code reads."`
}

// Kind implements Spec.
func (Python) Kind() string { return "python" }
