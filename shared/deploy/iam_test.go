package deploy

import (
	"slices"
	"testing"
)

// The IAM table covers every principal and only them (a new one, such as
// a runner's service account, is named in OtherPrincipals, added to
// Access and granted in terraform/), and every operation has grants.
func TestAccessTable(t *testing.T) {
	want := Principals()
	var principals []string
	for p := range Access {
		principals = append(principals, p)
	}
	slices.Sort(want)
	slices.Sort(principals)
	if !slices.Equal(want, principals) {
		t.Errorf("deploy.Access principals %v, want %v (the functions and OtherPrincipals)", principals, want)
	}
	for _, p := range principals {
		for _, op := range Ops(p) {
			if len(OpGrants[op]) == 0 {
				t.Errorf("%s: operation %s has no grants", p, op)
			}
		}
		if len(Grants(p)) == 0 {
			t.Errorf("%s: no grants", p)
		}
	}
	for _, op := range common {
		for _, p := range principals {
			if !slices.Contains(Ops(p), op) {
				t.Errorf("%s lacks the common operation %s", p, op)
			}
		}
	}
}

// A role another one on the same resource includes is not granted twice:
// a function that reads and writes results gets objectAdmin only; one
// that only reads gets objectViewer.
func TestGrantsSubsume(t *testing.T) {
	saved := Access["materialize"]
	defer func() { Access["materialize"] = saved }()
	Access["materialize"] = []Op{OpReadResults}
	if !slices.Contains(Grants("materialize"), Grant{ResResultsBucket, "roles/storage.objectViewer"}) {
		t.Errorf("a reader gets %v, want objectViewer", Grants("materialize"))
	}
	Access["materialize"] = []Op{OpReadResults, OpWriteResults}
	g := Grants("materialize")
	if slices.Contains(g, Grant{ResResultsBucket, "roles/storage.objectViewer"}) || !slices.Contains(g, Grant{ResResultsBucket, "roles/storage.objectAdmin"}) {
		t.Errorf("a reader and writer gets %v, want objectAdmin alone", g)
	}
	if Grants("nobody") != nil {
		t.Error("an unknown principal has grants")
	}
}
