package deploy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// Every Google Cloud client package the deployed functions link (the
// root package the Go buildpack builds, with its dependencies) is
// classified in ClientAPIs, and every API they call is in Services, with
// the Telemetry API the gcp exporters send to.
func TestServicesCoverTheClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", Module).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", Module, err)
	}
	need := map[string]string{}
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "cloud.google.com/go") && !strings.HasPrefix(pkg, "google.golang.org/api/") {
			continue
		}
		api, ok := ClientAPI(pkg)
		if !ok {
			t.Errorf("the functions link %s: classify it in ClientAPIs (the API it calls, or \"\")", pkg)
			continue
		}
		if api != "" {
			need[api] = pkg
		}
	}
	host, _, _ := strings.Cut(telemetry.GCPTelemetryEndpoint, ":")
	need[host] = "shared/telemetry (GCPTelemetryEndpoint)"
	if len(need) < 5 {
		t.Fatalf("found only %v: go list did not see the functions' clients", need)
	}
	for api, by := range need {
		if _, ok := ServiceByName(api); !ok {
			t.Errorf("%s is called by %s but missing from Services (terraform/services.tf would not enable it)", api, by)
		}
	}
}

func TestServicesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	var boot []string
	for _, s := range Services {
		if seen[s.Name] || !strings.HasSuffix(s.Name, ".googleapis.com") || s.Why == "" {
			t.Errorf("service %+v: duplicate, not a googleapis.com service, or without a reason", s)
		}
		seen[s.Name] = true
		if s.Bootstrap {
			boot = append(boot, s.Name)
		}
	}
	// Terraform enables the others through Service Usage and reads the
	// project through Cloud Resource Manager; the Pub/Sub service agent
	// Terraform grants roles to exists once Pub/Sub is enabled and its
	// identity created: those come first.
	slices.Sort(boot)
	if strings.Join(boot, " ") != "cloudresourcemanager.googleapis.com pubsub.googleapis.com serviceusage.googleapis.com" {
		t.Errorf("bootstrap services %v, want cloudresourcemanager, pubsub and serviceusage", boot)
	}
	for prefix, api := range ClientAPIs {
		if api != "" && !seen[api] {
			t.Errorf("ClientAPIs maps %s to %s, which is not in Services", prefix, api)
		}
	}
}
