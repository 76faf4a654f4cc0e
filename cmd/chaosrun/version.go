package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the chaosrun version and the versions of the MCP implementations it embeds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "chaosrun %s\n", version)
			info, ok := debug.ReadBuildInfo()
			if !ok {
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "go %s\n", info.GoVersion)
			for _, dep := range info.Deps {
				switch dep.Path {
				case "github.com/Shopify/toxiproxy/v2", "github.com/modelcontextprotocol/go-sdk", "github.com/mark3labs/mcp-go":
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", dep.Path, dep.Version)
				}
			}
			return nil
		},
	}
}
