package main

import (
	"time"

	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/dsl"
)

func (a *app) subscriptionCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:     "subscription",
		Aliases: []string{"subscriptions"},
		Short:   "kind: Subscription resources: register, list, describe, delete",
		Long: `Subscription resources (POST|GET /subscriptions, GET|DELETE /subscriptions/{name}):
each message of the resource's Pub/Sub subscription starts one execution of its
playbook (README "Subscriptions"). Registering points the subscription's push config
at the subscribe function; deleting makes it a pull subscription again.`,
	}, a.subscriptionRegisterCmd(), a.subscriptionListCmd(), a.subscriptionDescribeCmd(), a.subscriptionDeleteCmd())
}

// substitutePlaceholders fills the ${VAR} placeholders of src from sets
// (KEY=VALUE) and, with fromEnv, the environment; it returns the text and
// the names still missing.
func (a *app) substitutePlaceholders(src string, sets []string, fromEnv bool) (string, []string, error) {
	vars := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return "", nil, fail(ExitInvalid, "--set %q: want NAME=VALUE", s)
		}
		vars[k] = v
	}
	if fromEnv {
		for _, name := range dsl.Placeholders(src) {
			if _, ok := vars[name]; !ok {
				if v := a.env(name); v != "" {
					vars[name] = v
				}
			}
		}
	}
	out, missing := dsl.Substitute(src, vars)
	return out, missing, nil
}

func (a *app) subscriptionRegisterCmd() *cobra.Command {
	var (
		sets    []string
		fromEnv bool
	)
	c := &cobra.Command{
		Use:   "register FILE [--set NAME=VALUE ...] [--from-env]",
		Short: "Register a subscription resource",
		Long: `Substitute the resource's ${NAME} placeholders (--set NAME=VALUE, repeatable;
--from-env takes the others from environment variables of the same name), validate it
locally (every problem with its line, exit 2; a placeholder left is exit 2 too), then
register it (POST /subscriptions): its Pub/Sub subscription (spec.subscription, which
must exist) pushes to the subscribe function from now on. Registering a name again
replaces the registration. The resource's dispatch.playbook must be in the catalog
(catalog register) or a playbook file of the deployment. Exit 2 when the api refuses it
(an unknown playbook or subscription: 400; a subscription that pushes elsewhere or
that another registration consumes: 409). Prints the name, generation, subscription,
delivery and playbook (json: the api's answer).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			b, err := os.ReadFile(file)
			if err != nil {
				return fail(ExitInvalid, "%v", err)
			}
			src, missing, err := a.substitutePlaceholders(string(b), sets, fromEnv)
			if err != nil {
				return err
			}
			if len(missing) > 0 {
				return fail(ExitInvalid, "%s: placeholders without a value: %s (pass --set %s=VALUE, or --from-env)", file, "${"+strings.Join(missing, "}, ${")+"}", missing[0])
			}
			spec, err := dsl.LoadSubscription([]byte(src), file)
			if err != nil {
				fmt.Fprintln(a.stderr, err)
				return &exitError{code: ExitInvalid}
			}
			a.subscriptionWarnings(file, spec)
			var r struct {
				Name               string `json:"name"`
				Generation         int    `json:"generation"`
				PubSubSubscription string `json:"pubsub_subscription"`
				Delivery           string `json:"delivery"`
				PushEndpoint       string `json:"push_endpoint"`
				Playbook           string `json:"playbook"`
			}
			return a.post("/subscriptions", map[string]any{"resource": src}, "subscription "+spec.Metadata.Name, &r, func() {
				how := "pushes to " + r.PushEndpoint
				if r.Delivery == "pull" {
					how = "pulled in batches by the subscribe function"
				}
				fmt.Fprintf(a.stdout, "registered subscription %s (generation %d): %s %s; each message starts %s\n", r.Name, r.Generation, r.PubSubSubscription, how, r.Playbook)
			})
		},
	}
	c.Flags().StringArrayVar(&sets, "set", nil, "value of a ${NAME} placeholder, as NAME=VALUE (repeatable)")
	c.Flags().BoolVar(&fromEnv, "from-env", false, "take the values of the placeholders without --set from environment variables of the same name")
	return c
}

// subscriptionView is a registration as the api serves it.
type subscriptionView struct {
	Name               string    `json:"name"`
	Path               string    `json:"path"`
	Source             string    `json:"source"`
	PubSubSubscription string    `json:"pubsub_subscription"`
	Topic              string    `json:"topic"`
	Playbook           string    `json:"playbook"`
	Delivery           string    `json:"delivery"`
	PushEndpoint       string    `json:"push_endpoint"`
	Generation         int       `json:"generation"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

func (a *app) subscriptionListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the registered subscriptions",
		Long: `List the registered subscriptions (GET /subscriptions): name, Pub/Sub subscription,
delivery (push or pull), playbook, generation, last registration. json prints
{"subscriptions": [...]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body struct {
				Subscriptions []subscriptionView `json:"subscriptions"`
			}
			return a.showList("/subscriptions", "subscriptions", &body, []string{"NAME", "PUBSUB SUBSCRIPTION", "DELIVERY", "PLAYBOOK", "GEN", "UPDATED"}, func(t *table) int {
				sort.Slice(body.Subscriptions, func(i, j int) bool { return body.Subscriptions[i].Name < body.Subscriptions[j].Name })
				for _, s := range body.Subscriptions {
					t.row(s.Name, s.PubSubSubscription, s.Delivery, s.Playbook, strconv.Itoa(s.Generation), fmtTime(s.UpdatedAt))
				}
				return len(body.Subscriptions)
			}, "no subscription is registered")
		},
	}
}

func (a *app) subscriptionDescribeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "describe NAME",
		Aliases: []string{"show"},
		Short:   "Show a registered subscription and its resource",
		Long: `Show one registration (GET /subscriptions/{name}): its Pub/Sub subscription and
topic, delivery and push endpoint, playbook, generation, times, then the resource as
registered. Exit 3 for an unknown name.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var v subscriptionView
			return a.show("/subscriptions/"+url.PathEscape(name), "subscription "+name, &v, func() {
				t := newTable(a.stdout, "name", v.Name)
				t.row("path", v.Path)
				t.row("pubsub subscription", v.PubSubSubscription)
				t.row("topic", v.Topic)
				t.row("delivery", v.Delivery)
				if v.PushEndpoint != "" {
					t.row("push endpoint", v.PushEndpoint)
				}
				t.row("playbook", v.Playbook)
				t.row("generation", strconv.Itoa(v.Generation))
				t.row("created", fmtTime(v.CreatedAt))
				t.row("updated", fmtTime(v.UpdatedAt))
				t.flush()
				a.printSource(v.Source)
			})
		},
	}
}

func (a *app) subscriptionDeleteCmd() *cobra.Command {
	return a.deleteCmd("Delete a registered subscription", `Delete a registration (DELETE /subscriptions/{name}): its Pub/Sub subscription stops
pushing to the subscribe function and becomes a pull subscription again (messages
published afterwards wait there). Exit 3 for an unknown name.`,
		"/subscriptions", "subscription", " (its Pub/Sub subscription no longer pushes to the engine)", func(name string) {
			printJSON(a.stdout, []byte(`{"name": `+strconv.Quote(name)+`, "deleted": true}`))
		})
}

// subscriptionWarnings prints a subscription resource's warnings on
// stderr, each as "FILE:LINE: warning: ...".
func (a *app) subscriptionWarnings(file string, s *dsl.Subscription) {
	for _, w := range s.Warnings {
		fmt.Fprintf(a.stderr, "%s:%d: warning: %s\n", file, w.Line, w.String())
	}
}
