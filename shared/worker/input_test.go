package worker

import (
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// An attempt's event carries its rendered input (args and config) for the
// console's step inspector: masked like every event (a secret-named
// workload value never appears), the script's code left out with its
// size, and cut at InputInEvent with a marker.
func TestAttemptEventCarriesItsRenderedInput(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: input, path: tests/input}
workflow:
  - step: start
    tool:
      - small:
          kind: python
          args: {n: "{{ workload.n + 1 }}", token: "{{ workload.api_token }}"}
          code: "result = n"
      - large:
          kind: python
          args: {blob: "{{ workload.blob }}"}
          code: "result = 1"
`
	secret := "s3cr3t-value-for-input-test"
	env, w := setup(t, &fakeTool{}, src, map[string]any{"n": int64(2), "api_token": secret, "blob": strings.Repeat("z", 5000)})
	drain(t, env, w)
	wantOK(t, env)
	inputs := map[string]string{}
	for _, ev := range eventsOf(env, "ex1", types.EvTaskAttemptDone) {
		p, err := history.Decode[history.TaskAttempt](ev)
		if err != nil {
			t.Fatal(err)
		}
		inputs[ev.Task] = p.Input
	}
	small := inputs["small"]
	for _, want := range []string{`"n":3`, `"code":"(10 bytes: see the step's source)"`} {
		if !strings.Contains(small, want) {
			t.Errorf("small's input %s lacks %s", small, want)
		}
	}
	if strings.Contains(small, secret) || !strings.Contains(small, `"token":"`) {
		t.Errorf("small's input %s: the secret-named value is not masked", small)
	}
	large := inputs["large"]
	if !strings.HasSuffix(large, "bytes)") || !strings.Contains(large, "…(cut at ") || len(large) > InputInEvent+64 {
		t.Errorf("large's input (%d bytes) is not cut at %d with a marker: ...%s", len(large), InputInEvent, large[max(0, len(large)-80):])
	}
}
