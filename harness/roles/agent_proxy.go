package roles

import (
	"fmt"

	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/spf13/cobra"
)

func newProxyAgentCmd() *cobra.Command {
	var f agentFlags
	var wirePath string
	var share wire.Share
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
			opts := proxy.Options{Clock: clock, WirePath: f.path(wirePath), Logger: f.logger(cmd.ErrOrStderr(), "proxy"), Share: share}
			if !share.Valid() {
				return exitcode.With(exitcode.Invalid, fmt.Errorf("--share %d --shares %d: the share must be from 1 to --shares", share.Index, share.Of))
			}
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
	cmd.Flags().Int64Var(&share.Index, "share", 0, "this proxy agent's share of the run's clients, from 1, when several carry them (numbers its wire records and connections apart)")
	cmd.Flags().Int64Var(&share.Of, "shares", 0, "how many proxy agents carry the run's clients; 0 or 1: this one alone")
	return cmd
}
