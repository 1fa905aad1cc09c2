package cloudtasks

import (
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
)

// authorize makes Cloud Tasks attach an OIDC token to t's HTTP request
// (Authorization: Bearer <Google-signed ID token> of d.ServiceAccount,
// audience d.Audience or the target URL), which execute verifies
// (functions/execute: only that service account may call it; gen2
// functions are private). Without a ServiceAccount the request carries no
// token.
func (d *Dispatcher) authorize(t *cloudtaskspb.Task) {
	hr := t.GetHttpRequest()
	if d.ServiceAccount == "" || hr == nil {
		return
	}
	aud := d.Audience
	if aud == "" {
		aud = hr.Url
	}
	hr.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{
		ServiceAccountEmail: d.ServiceAccount, Audience: aud,
	}}
}
