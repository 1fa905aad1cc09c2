package main

import (
	"time"

	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/dsl"
)

func (a *app) catalogCmd() *cobra.Command {
	return a.groupCmd(&cobra.Command{
		Use:   "catalog",
		Short: "The playbook catalog: register, list, show",
		Long: `The playbook catalog (POST|GET /playbooks, GET /playbooks/{path}): versioned
playbooks that executions start by path ({"path": "..."} in POST /executions).`,
	}, a.catalogRegisterCmd(), a.catalogListCmd(), a.catalogShowCmd())
}

func (a *app) catalogRegisterCmd() *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:   "register FILE",
		Short: "Register a playbook file as a new catalog version",
		Long: `Validate FILE locally (every problem with its line, exit 2), then register it
(POST /playbooks) under --path, default its metadata.path, else its metadata.name.
Registering the latest version's exact source again returns that version. Prints
the path, version and name (json: the api's {"path", "version", "name"}).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			src, err := os.ReadFile(file)
			if err != nil {
				return fail(ExitInvalid, "%v", err)
			}
			if _, err := dsl.Load(src, file); err != nil {
				fmt.Fprintln(a.stderr, err)
				return &exitError{code: ExitInvalid}
			}
			var r struct {
				Path    string `json:"path"`
				Name    string `json:"name"`
				Version int    `json:"version"`
			}
			return a.post("/playbooks", map[string]any{"playbook": string(src), "path": path}, "catalog", &r, func() {
				fmt.Fprintf(a.stdout, "registered %s version %d (%s)\n", r.Path, r.Version, r.Name)
			})
		},
	}
	c.Flags().StringVar(&path, "path", "", "catalog path (default the playbook's metadata.path, else its name)")
	return c
}

func (a *app) catalogListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the catalog's playbooks",
		Long:  `List the catalog (GET /playbooks): path, name, latest version, last update. json prints {"playbooks": [...]}.`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body struct {
				Playbooks []struct {
					Path      string    `json:"path"`
					Name      string    `json:"name"`
					Latest    int       `json:"latest"`
					UpdatedAt time.Time `json:"updated_at"`
				} `json:"playbooks"`
			}
			return a.showList("/playbooks", "catalog", &body, []string{"PATH", "NAME", "LATEST", "UPDATED"}, func(t *table) int {
				for _, p := range body.Playbooks {
					t.row(p.Path, p.Name, strconv.Itoa(p.Latest), fmtTime(p.UpdatedAt))
				}
				return len(body.Playbooks)
			}, "the catalog is empty")
		},
	}
}

func (a *app) catalogShowCmd() *cobra.Command {
	var version int
	c := &cobra.Command{
		Use:   "show PATH",
		Short: "Show a catalog version and its source",
		Long: `Show one catalog version (GET /playbooks/{path}?version=N; default the latest):
path, name, version, registration time, then the playbook source. Exit 3 for an
unknown path or version.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := strings.Trim(args[0], "/")
			if version < 0 {
				return fail(ExitInvalid, "--version %d: want a positive number (0 = latest)", version)
			}
			q := ""
			if version > 0 {
				q = "?version=" + strconv.Itoa(version)
			}
			what := "playbook " + path
			if version > 0 {
				what += " version " + strconv.Itoa(version)
			}
			var v struct {
				Path      string    `json:"path"`
				Name      string    `json:"name"`
				Version   int       `json:"version"`
				Source    string    `json:"source"`
				CreatedAt time.Time `json:"created_at"`
			}
			return a.show("/playbooks/"+escapePath(path)+q, what, &v, func() {
				t := newTable(a.stdout, "path", v.Path)
				t.row("name", v.Name)
				t.row("version", strconv.Itoa(v.Version))
				t.row("created", fmtTime(v.CreatedAt))
				t.flush()
				a.printSource(v.Source)
			})
		},
	}
	c.Flags().IntVar(&version, "version", 0, "catalog version (default the latest)")
	return c
}
