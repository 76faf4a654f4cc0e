package main

import (
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/spf13/cobra"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of experiment files, for editors and other tools",
		Long: `Schema prints the JSON Schema (draft-07) of experiment files, generated from the types this
chaosrun's loader decodes into: the fault kinds and their params, the targets and their settings.
An editor with the YAML language server checks and completes a file whose first line is
  # yaml-language-server: $schema=<path or URL of the schema>
The loader stays the judge: rules between blocks are its alone (chaosrun validate).`,
		Example: `  chaosrun schema > docs/experiment.schema.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := spec.Schema()
			if err != nil {
				return withCode(exitHarness, err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}
