package api

import (
	"testing"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/wiring"
)

// TestRegistrarFromSettings: the subscriptions the api registers push to
// NOETL_SUBSCRIBE_URL with the OIDC identity NOETL_PUSH_SERVICE_ACCOUNT
// (subscribe.Registrar's SubscribeURL and PushServiceAccount, whose
// effect on a registered subscription shared/subscribe's
// TestRegisterWiresPushAndDeleteUnwires shows).
func TestRegistrarFromSettings(t *testing.T) {
	env := map[string]string{"NOETL_SIGNING_KEY": "api-test-key-0123456789abcdef0123456789ab", "GOOGLE_CLOUD_PROJECT": "p",
		"NOETL_SUBSCRIBE_URL": "https://subscribe.example/push", "NOETL_PUSH_SERVICE_ACCOUNT": "push@p.iam.gserviceaccount.com"}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := registrarOf(&wiring.Deps{Cfg: cfg}, nil)
	if r.SubscribeURL != "https://subscribe.example/push" || r.PushServiceAccount != "push@p.iam.gserviceaccount.com" || r.Project != "p" {
		t.Fatalf("registrar: url %q, account %q, project %q", r.SubscribeURL, r.PushServiceAccount, r.Project)
	}
}
