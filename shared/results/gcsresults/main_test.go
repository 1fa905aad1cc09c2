package gcsresults_test

import (
	"os"
	"testing"
)

// TestMain unsets STORAGE_EMULATOR_HOST: these tests run their own
// in-process fake-gcs-server, and the storage client would otherwise send
// some calls to the stack's emulator named by the variable (a test that
// wants an emulator sets the variable itself, with t.Setenv).
func TestMain(m *testing.M) {
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	os.Exit(m.Run())
}
