package roles

import (
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
	"github.com/spf13/cobra"
)

func newProxyAgentCmd() *cobra.Command {
	var f agentFlags
	var wirePath string
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Serve Toxiproxy's REST API with chaosrun's toxics registered, the wire observer's taps and the protocol triggers",
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
			opts := proxy.Options{Clock: clock, WirePath: f.path(wirePath), Logger: f.logger(cmd.ErrOrStderr(), "proxy")}
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
	cmd.Flags().StringVar(&wirePath, "wire", wire.File, "where the taps write their records (relative paths resolve against --state); empty: no file")
	return cmd
}
