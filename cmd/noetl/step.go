package main

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
)

// stepEnd is the api's answer to POST
// /executions/{id}/steps/{step}/complete|fail.
type stepEnd struct {
	ExecutionID string `json:"execution_id"`
	Step        string `json:"step"`
	StepRun     int    `json:"step_run"`
	Action      string `json:"action"`
	Status      string `json:"status"`
}

func (a *app) stepCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:   "step",
		Short: "Finish a stuck step run by hand (admin)",
		Long: `Finish the running run of a step by hand (admin role; runbook B, infra/runbooks
stuck-execution.md): complete it with a result you give, or fail it with your reason.
The end goes through the engine like any step's end (step.done or step.failed: the
step's arcs, ctx and the execution's end follow), after a step.forced event recording
who did it and why. A task still running in that step run is interrupted.`,
	}, a.stepEndCmd("complete"), a.stepEndCmd("fail"))
}

func (a *app) stepEndCmd(action string) *cobra.Command {
	var result, reason string
	c := &cobra.Command{
		Use:   action + " EXECUTION STEP",
		Short: map[string]string{"complete": "Complete a step's running run with a result", "fail": "Fail a step's running run"}[action],
		Long: map[string]string{
			"complete": `Complete the running run of STEP in EXECUTION (POST
/executions/{id}/steps/{step}/complete, admin role) with the result --result (JSON;
default null), as if its unit had ended with it: the steps after it read it as the
step's result. --reason is recorded in the step.forced event with your identity.`,
			"fail": `Fail the running run of STEP in EXECUTION (POST
/executions/{id}/steps/{step}/fail, admin role): the step fails with error kind
operator and the message "failed by <you>: <reason>"; its failure arcs or the
execution's failure follow. --reason is recorded in the step.forced event with your
identity.`,
		}[action] + `

Exit 3 for an unknown execution or step, 2 when the execution has ended or the step
has no running run (409), or for a --result that is not JSON.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, step := args[0], args[1]
			body := map[string]any{}
			if reason != "" {
				body["reason"] = reason
			}
			if action == "complete" && result != "" {
				var v any
				if err := json.Unmarshal([]byte(result), &v); err != nil {
					return fail(ExitInvalid, "--result is not JSON: %v", err)
				}
				body["result"] = json.RawMessage(result)
			}
			var r stepEnd
			return a.post("/executions/"+url.PathEscape(id)+"/steps/"+url.PathEscape(step)+"/"+action, body, "execution "+id+" step "+step, &r, func() {
				fmt.Fprintf(a.stdout, "execution %s: step %s run %d %s by hand (%s)\n", id, step, r.StepRun,
					map[string]string{"complete": "completed", "fail": "failed"}[action], r.Status)
			})
		},
	}
	if action == "complete" {
		c.Flags().StringVar(&result, "result", "", "the step's result, JSON (default null)")
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded with your identity in the step.forced event)")
	return c
}
