package toolspec

// Shell is the configuration of kind shell: programs run by a shell in
// the sandbox (noetl-tools ShellConfig).
type Shell struct {
	Command        string         `json:"command,omitempty" alias:"cmd" required:"command" doc:"The program: one shell command line (or script)."`
	Cmds           any            `json:"cmds,omitempty" alias:"commands" required:"command" doc:"Several programs, run in order: a list of command lines (a string is one command)."`
	Shell          string         `json:"shell,omitempty" default:"/bin/sh" doc:"The shell that runs each command (-c)."`
	Cwd            string         `json:"cwd,omitempty" alias:"working_dir" doc:"The directory the commands start in (default the attempt's own directory)."`
	Env            map[string]any `json:"env,omitempty" doc:"Environment variables of the commands (besides PATH, HOME, TMPDIR, LANG)."`
	TimeoutSeconds float64        `json:"timeout_seconds,omitempty" doc:"The commands' timeout in seconds (capped by the task's timeout)."`
	Capture        *bool          `json:"capture,omitempty" doc:"Whether stdout/stderr are captured into the result (default true; false drops them)." default:"true"`
	Exports        any            `json:"exports,omitempty" ignored:"no NoETL shell tool (Python or Rust) reads it, so no variable is exported: read what the commands print from the task's result (stdout) instead" doc:"NoETL ops playbooks: names of shell variables to export (read by no NoETL shell tool)."`
}

// Kind implements Spec.
func (Shell) Kind() string { return "shell" }
