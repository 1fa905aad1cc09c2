package firestorestore

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
)

// rot is a reversible test sealer (unit test fake of the signing key).
type rot struct{}

func (rot) Seal(b []byte) (string, error) { return "t." + base64.StdEncoding.EncodeToString(b), nil }
func (rot) Open(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "t.") {
		return nil, errors.New("not sealed by rot")
	}
	return base64.StdEncoding.DecodeString(s[2:])
}

// Secret-named workload values never reach the execution document in
// clear; reading the document gives them back.
func TestWorkloadSealedAtRest(t *testing.T) {
	st := &engine.State{ExecutionID: "e", Status: engine.ExecRunning, CreatedAt: time.Now().UTC(),
		Workload: map[string]any{"api_token": "T0ken-Secret", "db": map[string]any{"host": "h", "password": "Pw-Secret"},
			"list": []any{map[string]any{"secret": []any{"a1-Secret"}}}, "plain": "visible"}}
	d, err := toDoc(rot{}, DefaultRetention, &store.Execution{State: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"T0ken-Secret", "Pw-Secret", "a1-Secret"} {
		if strings.Contains(d.State, s) {
			t.Errorf("%s is in the document: %s", s, d.State)
		}
	}
	if !strings.Contains(d.State, "visible") || !strings.Contains(d.State, `"host":"h"`) {
		t.Errorf("non-secret values must stay readable: %s", d.State)
	}
	if st.Workload["api_token"] != "T0ken-Secret" {
		t.Error("toDoc modified the caller's state")
	}
	wl, err := store.OpenWorkload(rot{}, mustDecode(t, d.State))
	if err != nil {
		t.Fatal(err)
	}
	if wl["api_token"] != "T0ken-Secret" || wl["db"].(map[string]any)["password"] != "Pw-Secret" ||
		wl["list"].([]any)[0].(map[string]any)["secret"].([]any)[0] != "a1-Secret" {
		t.Errorf("opened workload %v", wl)
	}
	if _, err := store.OpenWorkload(nil, mustDecode(t, d.State)); !errors.Is(err, store.ErrSealed) {
		t.Errorf("sealed values without a key: %v, want ErrSealed", err)
	}
}

func mustDecode(t *testing.T, state string) map[string]any {
	t.Helper()
	var st engine.State
	if err := jsonx.Unmarshal([]byte(state), &st); err != nil {
		t.Fatal(err)
	}
	return st.Workload
}
