package deploy

// The runner: the data plane (README "Architecture"), a Cloud Run service
// of its own (terraform/runner.tf).
const (
	// RunnerService is the runner's Cloud Run service.
	RunnerService = "noetl-runner"
	// RunnerServiceAccount is the account id of the runner's service
	// account, which holds no role: user code runs with no control-plane
	// right.
	RunnerServiceAccount = "noetl-runner"
	// RunnerInvoker is the one function whose service account may invoke
	// the runner (roles/run.invoker on the service).
	RunnerInvoker = "execute"
)
