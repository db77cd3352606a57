package main

import (
	"context"
	"fmt"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trawlerhq/trawler/app"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "trawler",
		Short:         "Browser-based web crawls on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newDevCommand(), newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "trawler %s (%s, %s/%s)\n", app.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the REST API and run the operator",
		Long: `Serve the REST API and run the operator in one process.

All replicas serve the API; the operator and the crawl scheduler run only in
the replica holding the leader-election Lease. --api=false or
--operator=false runs one role alone.`,
		Args: cobra.NoArgs,
	}
	cfgFile := app.BindConfigFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := app.LoadConfig(*cfgFile, cmd.Flags())
		if err != nil {
			return err
		}
		ctx, stop := signalContext(cmd.Context())
		defer stop()
		return app.Serve(ctx, cfg, app.Deps{})
	}
	return cmd
}

// signalContext is cancelled on SIGTERM or SIGINT.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
}
