package main

import (
	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/dsl/schema"
)

// schemaCmd prints the JSON Schema of the playbook DSL.
func (a *app) schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the playbook DSL (for editors)",
		Long: `Print the JSON Schema (draft-07) of a playbook on stdout: every key the loader
reads, with its description, its shapes (the NoETL spellings and legacy forms the
loader maps included) and the keys each task kind takes. The repository publishes
the same bytes as schema/playbook.schema.json. Point an editor at it with a first
line such as

  # yaml-language-server: $schema=../schema/playbook.schema.json

The schema is structural: "noetl validate" also checks what needs the whole
playbook (arc targets, names, templates). Needs no api. Exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := schema.Generate()
			if err != nil {
				return fail(ExitFailed, "%v", err)
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
}
