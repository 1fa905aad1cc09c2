package toolspec

// Python is the configuration of kind python: python code run in the sandbox (noetl-tools PythonConfig; NoETL's python executor).
type Python struct {
	Code           string `json:"code,omitempty" required:"code" doc:"The python source: its top-level names see the task's input; the result is its 'result' variable (or main()'s return)."`
	CodeB64        string `json:"code_b64,omitempty" alias:"code_base64" required:"code" doc:"The source, base64-encoded UTF-8 text."`
	Script         any    `json:"script,omitempty" required:"code" doc:"A script block {path | uri | source: {type: file|gcs|http|inline, ...}} whose text is the source."`
	Libs           any    `json:"libs,omitempty" doc:"Modules to import: a mapping alias → module (libs: {pd: pandas}) or {alias: {from: package, import: name}}; a list of module names imports each under its own name."`
	Deps           any    `json:"deps,omitempty" ignored:"packages are not installed at run time: the code imports the modules the sandbox interpreter has" doc:"NoETL: packages to install (packages are not installed at run time here)."`
	Packages       any    `json:"packages,omitempty" ignored:"packages are not installed at run time: the code imports the modules the sandbox interpreter has" doc:"NoETL: packages to install (packages are not installed at run time here)."`
	Env            any    `json:"env,omitempty" ignored:"the code runs in the sandbox with its own fixed environment; pass values as the task input" doc:"NoETL: environment variables of the code."`
	Python         any    `json:"python,omitempty" ignored:"the interpreter is the engine's (NOETL_PYTHON), not chosen per task" doc:"NoETL: the interpreter to use."`
	Cwd            any    `json:"cwd,omitempty" ignored:"the code runs in the attempt's own sandbox directory" doc:"NoETL: the working directory."`
	TimeoutSeconds any    `json:"timeout_seconds,omitempty" ignored:"the code's timeout is the task's (timeout:, spec.timeout)" doc:"NoETL: the code's timeout in seconds."`
	Auth           any    `json:"auth,omitempty" ignored:"credentials reach python code through a secrets task or the keychain, passed as input" doc:"NoETL: credentials the code reads."`
}

// Kind implements Spec.
func (Python) Kind() string { return "python" }
