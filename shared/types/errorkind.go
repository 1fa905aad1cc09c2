package types

// ErrorKind classifies a failed task (TaskError.Kind, outcome.error.kind in
// templates and policy rules: `outcome.error.kind == 'rate_limit'`). It is
// the engine's one vocabulary of task failures: every kind is a constant
// below, and the tools' failure helpers take an ErrorKind, never a string
// (a test of shared/errs fails on a kind written as a literal anywhere in
// the module). The wire value (the constant's string) is stable: recorded
// events, policy rules of playbooks and NoETL's error taxonomy (noetl
// core/errors classify_error) name it.
//
// Retry class: whether a kind is retried is decided per failure
// (TaskError.Retryable, set by the tool from errs.PolicyOf of the cause's
// code or from the protocol, e.g. HTTP 408/429/5xx); each constant's doc
// says which it usually is: "never" (the same input fails again),
// "always" (a transient failure), or "by cause".
type ErrorKind string

// Kinds the engine itself records.
const (
	// ErrKindTemplate: a template of the task did not render (a bad
	// expression, an undefined value, a template limit). Never retried.
	ErrKindTemplate ErrorKind = "template"
	// ErrKindTimeout: the attempt ran past its timeout (the task's, the
	// step's, a tool's deadline). Always retried (the task's policy
	// decides whether to run it again).
	ErrKindTimeout ErrorKind = "timeout"
	// ErrKindPolicy: the step's policy failed the step (a rule with
	// do: fail). Never retried.
	ErrKindPolicy ErrorKind = "policy"
	// ErrKindConfig: the task's configuration is invalid (a missing or
	// malformed field, a value over a limit): errs.InvalidArgument.
	// Never retried.
	ErrKindConfig ErrorKind = "config"
	// ErrKindPlaybook: a child playbook (a playbook task) failed or could
	// not start. Never retried.
	ErrKindPlaybook ErrorKind = "playbook"
	// ErrKindCanceled: the attempt was canceled (the execution canceled,
	// the instance shutting down). Retried when the cancel was not the
	// execution's.
	ErrKindCanceled ErrorKind = "canceled"
	// ErrKindOperator: an operator failed the step run by hand (`noetl
	// step fail`, control.ForceStep); the message names who and why.
	// Never retried.
	ErrKindOperator ErrorKind = "operator"
	// ErrKindForbidden: a control refused the task (not retried): a
	// credential the playbook is not granted, a result reference of an
	// execution that is not its own, its parent's or a child's.
	ErrKindForbidden ErrorKind = "forbidden"
	// ErrKindArtifact: an artifact or result_fetch task's stored result is
	// there and intact but is not what the task reads (e.g. a JSON result
	// copied as a table). Never retried.
	ErrKindArtifact ErrorKind = "artifact"
	// ErrKindResultLost fails a step that reads a stored result whose
	// object is gone or corrupt — it does not match the digest its
	// reference records (results.ErrDigest) or does not decode (NoETL
	// result storage RFC "repair"): its templates, the artifact and
	// result_fetch kinds, a loop over it, a transfer from it. The message
	// names the result's URI; a lost result does not come back by
	// retrying, so it is never redelivered.
	ErrKindResultLost ErrorKind = "result_lost"
	// ErrKindResultTooLarge fails a step whose templates or python code
	// read the whole of a stored result over the materialisation limit
	// (NOETL_RESULT_MATERIALIZE_MAX_MB): it is read by streaming
	// consumers (loop.in, transfer source type result, artifact). Never
	// retried.
	ErrKindResultTooLarge ErrorKind = "result_too_large"
	// ErrKindHalted: the step was stopped because another branch failed
	// under the halt policy (on_step_fail: halt; NoETL observability spec
	// §8.8). Never retried.
	ErrKindHalted ErrorKind = "halted"
	// ErrKindInternal: a failure of the engine or the tool itself, not of
	// the task (a broken invariant, an unexpected backend error): by cause,
	// usually retried (errs.Internal, errs.Unknown).
	ErrKindInternal ErrorKind = "internal"
	// ErrKindLimit: the attempt reached a resource limit of its sandbox or
	// of the result tier (memory, CPU time, output, file size, quota).
	// Never retried (the same attempt reaches it again).
	ErrKindLimit ErrorKind = "limit"
	// ErrKindRunner: the runner could not be asked or did not answer (an
	// unreachable runner, a refused token, an answer over its limit). By
	// cause: retried but for an answer the runner refused (HTTP 400).
	ErrKindRunner ErrorKind = "runner"
	// ErrKindCredentials: a credential the task names could not be
	// resolved (missing, undecodable). By cause (errs code of the store).
	ErrKindCredentials ErrorKind = "credentials"
	// ErrKindNotFound: what the task reads is not there (an object, a
	// script, a file, an HTTP 404). Never retried.
	ErrKindNotFound ErrorKind = "not_found"
	// ErrKindForbiddenAddress: the egress policy refused the destination
	// (errs.PermissionDenied). Never retried.
	ErrKindForbiddenAddress ErrorKind = "forbidden_address"
	// ErrKindForbiddenPath: a path outside the directories the task may
	// use. Never retried.
	ErrKindForbiddenPath ErrorKind = "forbidden_path"
	// ErrKindStorage: a storage backend (GCS, S3, a local directory)
	// failed. By cause (errs code of the backend's error).
	ErrKindStorage ErrorKind = "storage"
	// ErrKindTransfer: a transfer task failed between its source and its
	// sink. By cause.
	ErrKindTransfer ErrorKind = "transfer"
)

// Kinds of one tool each: the failure of the tool's backend or user code.
// Their retry class is by cause (the backend's errs code, SQLSTATE class,
// the exception) unless said otherwise.
const (
	// ErrKindPython: the python code raised (outcome.py.exception_type
	// names the exception). Never retried by the tool.
	ErrKindPython ErrorKind = "python"
	// ErrKindShell: the shell command exited non-zero. Never retried by
	// the tool.
	ErrKindShell ErrorKind = "shell"
	// ErrKindPostgres: PostgreSQL refused or failed the statement
	// (outcome.pg.sqlstate); by SQLSTATE class.
	ErrKindPostgres ErrorKind = "postgres"
	// ErrKindDuckDB: DuckDB failed the statement.
	ErrKindDuckDB ErrorKind = "duckdb"
	// ErrKindPubSub: Pub/Sub failed a publish or a pull.
	ErrKindPubSub ErrorKind = "pubsub"
	// ErrKindNATS: NATS failed a publish, a request or a JetStream call.
	ErrKindNATS ErrorKind = "nats"
	// ErrKindKafka: Kafka failed a produce or a fetch.
	ErrKindKafka ErrorKind = "kafka"
	// ErrKindHTTP: an HTTP exchange failed outside the status taxonomy
	// below (a body over its limit, a script fetched over HTTP). By
	// status: 408, 429 and 5xx retried.
	ErrKindHTTP ErrorKind = "http"
)

// Kinds of an HTTP answer or exchange: NoETL's error taxonomy (noetl
// core/errors classify_error), which NoETL's playbooks match in their
// policy rules.
const (
	// ErrKindRateLimit is a 429 answer. Always retried.
	ErrKindRateLimit ErrorKind = "rate_limit"
	// ErrKindAuth is a 401 or 403 answer, or a credential the service
	// refused. Never retried.
	ErrKindAuth ErrorKind = "auth"
	// ErrKindClientError is any other 4xx answer (408 is retried).
	ErrKindClientError ErrorKind = "client_error"
	// ErrKindServerError is a 5xx answer. Always retried.
	ErrKindServerError ErrorKind = "server_error"
	// ErrKindConnection is a failure to connect or a connection lost
	// before a complete answer. Always retried.
	ErrKindConnection ErrorKind = "connection"
)

// ErrorKinds returns every kind of the vocabulary, in declaration order.
func ErrorKinds() []ErrorKind {
	return []ErrorKind{
		ErrKindTemplate, ErrKindTimeout, ErrKindPolicy, ErrKindConfig, ErrKindPlaybook,
		ErrKindCanceled, ErrKindOperator, ErrKindForbidden, ErrKindArtifact, ErrKindResultLost,
		ErrKindResultTooLarge, ErrKindHalted, ErrKindInternal, ErrKindLimit, ErrKindRunner, ErrKindCredentials,
		ErrKindNotFound, ErrKindForbiddenAddress, ErrKindForbiddenPath, ErrKindStorage, ErrKindTransfer,
		ErrKindPython, ErrKindShell, ErrKindPostgres, ErrKindDuckDB, ErrKindPubSub, ErrKindNATS,
		ErrKindKafka, ErrKindHTTP, ErrKindRateLimit, ErrKindAuth, ErrKindClientError,
		ErrKindServerError, ErrKindConnection,
	}
}

// Known reports whether k is a kind of the vocabulary.
func (k ErrorKind) Known() bool {
	for _, v := range ErrorKinds() {
		if v == k {
			return true
		}
	}
	return false
}

// ErrorKindOf returns the kind whose wire value is s, as read back from a
// recorded outcome (a map decoded from JSON). A value outside the
// vocabulary (an outcome recorded by another version) is kept as is.
func ErrorKindOf(s string) ErrorKind { return ErrorKind(s) }
