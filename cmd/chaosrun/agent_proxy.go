package main

import (
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/spf13/cobra"
)

func newProxyAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve Toxiproxy's REST API with chaosrun's toxics registered (idle_timeout, stall, http_status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			ln, err := f.listen(cmd)
			if err != nil {
				return err
			}
			var log = cmd.ErrOrStderr()
			if !f.verbose {
				log = nil
			}
			a, err := proxy.Start(ctx, ln, log)
			if err != nil {
				return withCode(exitHarness, err)
			}
			announce(cmd, ln)
			<-ctx.Done()
			return withCode(exitHarness, a.Close())
		},
	}
	f.register(cmd, true)
	return cmd
}
