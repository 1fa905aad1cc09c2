package cloudtasks

import (
	"testing"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
)

func TestAuthorize(t *testing.T) {
	task := func() *cloudtaskspb.Task {
		return &cloudtaskspb.Task{MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{Url: "https://execute.example/run"}}}
	}
	// No service account: no token.
	tk := task()
	(&Dispatcher{}).authorize(tk)
	if tk.GetHttpRequest().GetOidcToken() != nil {
		t.Error("token without a service account")
	}
	// The configured audience, else the target URL.
	for _, c := range []struct{ aud, want string }{{"https://aud.example", "https://aud.example"}, {"", "https://execute.example/run"}} {
		tk := task()
		(&Dispatcher{ServiceAccount: "sa@p.iam.gserviceaccount.com", Audience: c.aud}).authorize(tk)
		tok := tk.GetHttpRequest().GetOidcToken()
		if tok.GetServiceAccountEmail() != "sa@p.iam.gserviceaccount.com" || tok.GetAudience() != c.want {
			t.Errorf("audience %q: token %v, want audience %q", c.aud, tok, c.want)
		}
	}
}
