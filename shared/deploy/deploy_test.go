package deploy

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestManifestConsistent checks the manifest against itself: every push
// function has the subscription that pushes to it, every subscription's
// topics exist, pull subscriptions only read dead-letter topics, and
// names are unique.
func TestManifestConsistent(t *testing.T) {
	unique := func(kind string, names []string) {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("%s %q declared twice", kind, n)
			}
			seen[n] = true
		}
	}
	var fnames, snames, groups []string
	for _, f := range Functions {
		fnames = append(fnames, f.Name)
		if !strings.HasPrefix(f.Package, Module+"/functions/") {
			t.Errorf("%s: package %s outside functions/", f.Name, f.Package)
		}
		switch f.Trigger {
		case TriggerHTTP:
			// push: subscribe, the endpoint of run-time push subscriptions.
			if f.Subscription != "" || (f.Invokers != "users" && f.Invokers != "tasks" && f.Invokers != "push") {
				t.Errorf("%s: HTTP function with subscription %q / invokers %q", f.Name, f.Subscription, f.Invokers)
			}
		case TriggerPush:
			if f.Invokers != "push" {
				t.Errorf("%s: push function invoked by %q", f.Name, f.Invokers)
			}
			i := slices.IndexFunc(Subscriptions, func(s Subscription) bool { return s.Name == f.Subscription })
			if i < 0 || Subscriptions[i].Push != f.Name {
				t.Errorf("%s: no subscription %q pushing to it", f.Name, f.Subscription)
			}
		default:
			t.Errorf("%s: unknown trigger %q", f.Name, f.Trigger)
		}
	}
	unique("function", fnames)
	for _, s := range Subscriptions {
		snames = append(snames, s.Name)
		if !slices.Contains(Topics, s.Topic) {
			t.Errorf("subscription %s: unknown topic %s", s.Name, s.Topic)
		}
		if s.Push == "" {
			if !strings.HasSuffix(s.Topic, "-dead") || s.DeadLetterTopic != "" || s.Filter != "" {
				t.Errorf("pull subscription %s must inspect a -dead topic", s.Name)
			}
			continue
		}
		if f, ok := FunctionByName(s.Push); !ok || f.Trigger != TriggerPush || f.Subscription != s.Name {
			t.Errorf("subscription %s pushes to %q, which is not its push function", s.Name, s.Push)
		}
		if s.DeadLetterTopic != s.Topic+"-dead" {
			t.Errorf("subscription %s: dead-letter topic %q, want %s-dead", s.Name, s.DeadLetterTopic, s.Topic)
		}
	}
	unique("subscription", snames)
	unique("topic", Topics)
	unique("queue", Queues)
	// Every dead-letter topic has an inspect subscription.
	for _, tp := range Topics {
		if strings.HasSuffix(tp, "-dead") && !slices.ContainsFunc(Subscriptions, func(s Subscription) bool { return s.Topic == tp && s.Push == "" }) {
			t.Errorf("dead-letter topic %s has no pull subscription to inspect it", tp)
		}
	}
	for _, c := range Collections {
		groups = append(groups, c.Group)
		if seg := strings.Split(c.Path, "/"); len(seg)%2 != 0 || seg[len(seg)-2] != c.Group {
			t.Errorf("collection %s: path %s does not end in its group", c.Group, c.Path)
		}
		if strings.HasPrefix(c.Path, "executions/") && c.TTLField != TTLField {
			t.Errorf("collection %s under executions has no TTL (Firestore TTL does not cascade to subcollections)", c.Group)
		}
	}
	unique("collection", groups)
	for _, ix := range Indexes {
		if _, ok := CollectionByGroup(ix.Collection); !ok || len(ix.Fields) < 2 {
			t.Errorf("index on %s: unknown collection or fewer than two fields", ix.Collection)
		}
		for _, f := range ix.Fields {
			if f.Order != "ASCENDING" && f.Order != "DESCENDING" {
				t.Errorf("index on %s: field %s order %q", ix.Collection, f.Path, f.Order)
			}
		}
	}
}

// TestFunctionPackagesExist checks that each function's package exists and
// imports the functions-framework registration API.
func TestFunctionPackagesExist(t *testing.T) {
	for _, f := range Functions {
		p, err := build.Import(f.Package, ".", 0)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if !slices.Contains(p.Imports, "github.com/GoogleCloudPlatform/functions-framework-go/functions") {
			t.Errorf("%s: package %s does not register with functions-framework", f.Name, f.Package)
		}
	}
}
