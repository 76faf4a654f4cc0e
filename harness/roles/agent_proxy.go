package roles

import (
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/internal/exitcode"
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
			clock, err := f.clock()
			if err != nil {
				return err
			}
			opts := proxy.Options{Clock: clock}
			if f.verbose {
				opts.Log = cmd.ErrOrStderr()
			}
			a, err := proxy.Start(ctx, ln, opts)
			if err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			announce(cmd, ln)
			<-ctx.Done()
			return exitcode.With(exitcode.Harness, a.Close())
		},
	}
	f.register(cmd, true)
	return cmd
}
