// Package tasks is the contract of the engine's task queue (README
// "Architecture" "dispatch"): Creator, the interface the control plane
// creates units of work through, and what every driver and fake shares —
// the body of a unit's task (Body: the command with the creator's trace,
// secrets masked), the reference body of a unit too large for a task
// (MaxTaskBytes, RefCommand, LoadBody, BodyStore). It links no cloud
// client: the Cloud Tasks driver is shared/tasks/cloudtasks, the in-memory
// fake controltest.Tasks, and both run the suite of shared/tasks/taskstest
// (in the manner of river's riverdriver beside riverpgxv5).
package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Creator turns units of work into Cloud Tasks: what the control plane
// needs from the task queue. Create returns created=false (and no error)
// when a task of the same name exists or existed recently (a duplicate:
// Cloud Tasks dedups names); Delete removes a pending task (absent is not
// an error).
type Creator interface {
	TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (created bool, err error)
	TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error
	// TaskDeleteExecution deletes every pending task of an execution (its
	// names start with types.TaskPrefix) from the queues but its watchdogs
	// (types.IsWatchdog: they close the chains of units whose holders
	// died) and returns how many it deleted.
	TaskDeleteExecution(ctx context.Context, executionID string) (int, error)
}

// MaxTaskBytes is the largest Cloud Task the dispatcher creates, in bytes
// of the serialized task (name, URL, headers, body): Cloud Tasks' 100 KB
// task size limit (CreateTask API reference; the emulator enforces it the
// same way). A command whose task would be larger is stored in Bodies and
// the task carries only its reference (BodyRef).
const MaxTaskBytes = 100 * 1024

// BodyStore is the byte store of large command bodies (the results tier:
// results.Store and results.Backend implement it). Put overwrites; Get
// returns the bytes last put at key.
type BodyStore interface {
	Put(ctx context.Context, key string, data []byte, contentType string) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// BodyKey is the results-tier object key of a command's offloaded body:
// bodies/<execution id>/<task name>.json (the bucket's lifecycle rule
// expires it with the execution's results).
func BodyKey(cmd types.Command) string {
	return "bodies/" + cmd.ExecutionID + "/" + cmd.TaskName() + ".json"
}

// Body returns the body of cmd's Cloud Task as TaskCreate sends it: the
// command continuing ctx's trace (TraceParent set from ctx when empty),
// JSON encoded, with the execution's secret values masked (the redactor of
// ctx, redact.WithRedactor: a secret never travels in a task body). The
// fakes of Creator build their bodies with it too.
func Body(ctx context.Context, cmd types.Command) ([]byte, error) {
	if cmd.TraceParent == "" {
		// The unit continues the creator's trace (W3C context in a header).
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "tasks: encode command")
	}
	return redact.FromContext(ctx).SecretsBytes(body), nil
}

// RefCommand returns the reference body of a command whose full body is
// stored at BodyKey(cmd): the fields its task name derives from (so
// TaskName is the same), its schedule and trace, and BodyRef with
// the body's SHA-256 and size. Signed like any body, it authenticates the
// stored bytes through their digest.
func RefCommand(cmd types.Command, body []byte) types.Command {
	sum := sha256.Sum256(body)
	return types.Command{
		ID: cmd.ID, Kind: cmd.Kind, ExecutionID: cmd.ExecutionID, Step: cmd.Step, StepRun: cmd.StepRun,
		Iteration: cmd.Iteration, TaskIndex: cmd.TaskIndex, Attempt: cmd.Attempt, Jumps: cmd.Jumps, NotBefore: cmd.NotBefore,
		StateVersion: cmd.StateVersion, Clock: cmd.Clock, TraceParent: cmd.TraceParent, ChildID: cmd.ChildID,
		Reclaim: cmd.Reclaim, Replay: cmd.Replay, HandOff: cmd.HandOff, Holder: cmd.Holder, Seq: cmd.Seq,
		BodyRef: &types.BodyRef{Key: BodyKey(cmd), SHA256: hex.EncodeToString(sum[:]), Bytes: len(body)},
	}
}

// LoadBody returns the full command of a reference body (cmd.BodyRef set)
// read from bs, after checking its SHA-256 and that it is the command the
// reference names (same id, execution and step); a command without
// BodyRef is returned as is. Errors: a missing store or object, or a
// digest or identity mismatch, are permanent (errs.InvalidArgument) — the
// unit can never run — except a store failure, which is returned as is
// (transient).
func LoadBody(ctx context.Context, bs BodyStore, cmd types.Command) (types.Command, error) {
	ref := cmd.BodyRef
	if ref == nil {
		return cmd, nil
	}
	if bs == nil {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's body is in the results tier (%s) but no results tier is configured", ref.Key)
	}
	if ref.Key != BodyKey(cmd) {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's body reference %q is not the unit's own key", ref.Key)
	}
	body, err := bs.Get(ctx, ref.Key)
	if err != nil {
		if errors.Is(err, results.ErrNotFound) {
			return cmd, errs.Wrap(errs.InvalidArgument, err, "tasks: the unit's stored body is gone")
		}
		return cmd, fmt.Errorf("tasks: load the unit's stored body: %w", err)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != ref.SHA256 || len(body) != ref.Bytes {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's stored body %s does not match its digest", ref.Key)
	}
	var full types.Command
	if err := jsonx.Unmarshal(body, &full); err != nil {
		return cmd, errs.Wrap(errs.InvalidArgument, err, "tasks: decode the unit's stored body")
	}
	if full.TaskName() != cmd.TaskName() || full.ID != cmd.ID || full.BodyRef != nil {
		return cmd, errs.New(errs.InvalidArgument, "tasks: the unit's stored body %s is another unit", ref.Key)
	}
	return full, nil
}
