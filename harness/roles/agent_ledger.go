package roles

import (
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/spf13/cobra"
)

func newLedgerAgentCmd() *cobra.Command {
	var f agentFlags
	var store string
	var noSync bool
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Serve the side-effect ledger (durable; every acknowledged record survives SIGKILL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			ln, err := f.listen(cmd)
			if err != nil {
				return err
			}
			st, err := sideeffects.OpenStore(f.path(store), sideeffects.StoreOptions{NoSync: noSync})
			if err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			defer st.Close()
			announce(cmd, ln)
			return exitcode.With(exitcode.Harness, sideeffects.Serve(ctx, ln, st))
		},
	}
	f.register(cmd, true)
	cmd.Flags().StringVar(&store, "store", "ledger.log", "the ledger's append log")
	cmd.Flags().BoolVar(&noSync, "no-sync", false, "skip fsync (records survive a process kill, not a machine crash)")
	return cmd
}
