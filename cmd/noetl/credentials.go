package main

import (
	"time"

	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/jsonx"
)

func (a *app) credentialsCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:   "credentials",
		Short: "The credential store behind playbook keychains: set, list, show, delete",
		Long: `The credential store behind playbook keychains (POST|GET /credentials,
GET|DELETE /credentials/{name}). Secret values go in and are never shown back: list
and show print metadata and the data field names only.`,
	}, a.credentialsSetCmd(), a.credentialsListCmd(), a.credentialsShowCmd(), a.credentialsDeleteCmd())
}

func (a *app) credentialsSetCmd() *cobra.Command {
	var kind, data, description string
	var grants []string
	c := &cobra.Command{
		Use:   "set NAME --kind KIND --data JSON [--grant PATTERN ...]",
		Short: "Create or replace a credential",
		Long: `Create or replace a credential (POST /credentials). --kind is postgres,
http_bearer, http_basic, http_header, secret, gcs, nats, pubsub, kafka or s3 (NoETL
aliases such as postgres_credential are accepted); --data is the JSON object of its secret fields,
or @FILE to read it from a file, or - to read it from stdin (keeps secrets out of the
shell history). --grant names the playbooks that may use it (repeatable; none: no
playbook may): a catalog path or playbook file pattern (examples/*, tests/fixtures/**,
examples/keychain.yaml; * within a path segment, ** across them), or inline:PRINCIPAL
for playbooks sent inline (scripts/run, noetl run) by that caller (inline:token, the
stack's token; inline:*@example.com). A set replaces the grants too. Exit 2 when the
api rejects it (every problem is listed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if kind == "" {
				return fail(ExitInvalid, "credentials set needs --kind")
			}
			if data == "" {
				return fail(ExitInvalid, "credentials set needs --data JSON (or @FILE, or - for stdin)")
			}
			src, err := a.flagBytes("--data", data)
			if err != nil {
				return err
			}
			var obj map[string]any
			if err := jsonx.Unmarshal(src, &obj); err != nil || obj == nil {
				// Never echo the value: it holds secrets.
				return fail(ExitInvalid, "--data is not a JSON object of the secret fields")
			}
			var r struct {
				Name   string   `json:"name"`
				Kind   string   `json:"kind"`
				Grants []string `json:"grants"`
			}
			if grants == nil {
				grants = []string{}
			}
			return a.post("/credentials", map[string]any{"name": name, "kind": kind, "description": description, "grants": grants, "data": obj}, "credential "+name, &r, func() {
				if len(r.Grants) == 0 {
					fmt.Fprintf(a.stdout, "credential %s stored (kind %s; no grants: no playbook may use it until it is set with --grant)\n", r.Name, r.Kind)
					return
				}
				fmt.Fprintf(a.stdout, "credential %s stored (kind %s; granted to %s)\n", r.Name, r.Kind, strings.Join(r.Grants, ", "))
			})
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "credential kind (required)")
	c.Flags().StringVar(&data, "data", "", "JSON object of the secret fields, @FILE, or - for stdin (required)")
	c.Flags().StringVar(&description, "description", "", "free text shown by list and show")
	c.Flags().StringArrayVar(&grants, "grant", nil, "a playbook path pattern or inline:PRINCIPAL that may use the credential (repeatable)")
	return c
}

// credentialView is a credential's metadata (never its values).
type credentialView struct {
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Keys        []string  `json:"keys"`
	Grants      []string  `json:"grants"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (a *app) credentialsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List credentials (metadata only)",
		Long:  `List credentials (GET /credentials): name, kind, grants, description, last update. json prints {"credentials": [...]}.`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body struct {
				Credentials []credentialView `json:"credentials"`
			}
			return a.showList("/credentials", "credentials", &body, []string{"NAME", "KIND", "GRANTS", "DESCRIPTION", "UPDATED"}, func(t *table) int {
				for _, c := range body.Credentials {
					t.row(c.Name, c.Kind, oneLine(strings.Join(c.Grants, ", "), 50), oneLine(c.Description, 60), fmtTime(c.UpdatedAt))
				}
				return len(body.Credentials)
			}, "no credentials")
		},
	}
}

func (a *app) credentialsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a credential's metadata and data field names",
		Long:  `Show a credential (GET /credentials/{name}): kind, description, the names of its data fields (never their values), its grants, times. Exit 3 for an unknown name.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var v credentialView
			return a.show("/credentials/"+url.PathEscape(name), "credential "+name, &v, func() {
				t := newTable(a.stdout, "name", v.Name)
				t.row("kind", v.Kind)
				t.row("description", v.Description)
				t.row("keys", strings.Join(v.Keys, ", "))
				t.row("grants", strings.Join(v.Grants, ", "))
				t.row("created", fmtTime(v.CreatedAt))
				t.row("updated", fmtTime(v.UpdatedAt))
				t.flush()
			})
		},
	}
}

func (a *app) credentialsDeleteCmd() *cobra.Command {
	return a.deleteCmd("Delete a credential", `Delete a credential (DELETE /credentials/{name}). Exit 3 for an unknown name.`,
		"/credentials", "credential", "", func(name string) {
			printValue(a.stdout, map[string]any{"name": name, "deleted": true})
		})
}
