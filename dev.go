package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/sandbox/devstack"
)

func newDevCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run trawler against a local sandbox cluster (what make dev runs)",
		Long: `Start a sandbox on loopback (kube-apiserver, etcd, kube-scheduler,
kube-controller-manager, a simulated kubelet running the crawler simulator,
redis-server, a MongoDB-wire server, Mailpit and an S3 server), then trawler
serve against it; e-mails go to Mailpit, crawl files to the S3 server.

Writes <dir>/env with TRAWLER_API_URL, KUBECONFIG, the Mongo and Redis URLs,
MAILPIT_URL (Mailpit's web UI, where invites and reset e-mails show) and the
S3 server's endpoint, bucket and keys. Ctrl-C stops everything; no process
is left behind.

Defaults differ from serve: ` + fmt.Sprint(devstack.Defaults),
		Args: cobra.NoArgs,
	}
	dir := cmd.Flags().String("dir", ".dev", "folder for the sandbox's files and the env file")
	nodes := cmd.Flags().Int("nodes", 2, "simulated nodes (8 CPUs, 32Gi each)")
	cfgFile := app.BindConfigFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := app.LoadConfig(*cfgFile, cmd.Flags())
		if err != nil {
			return err
		}
		for key, value := range devstack.Defaults {
			v.SetDefault(key, value) // file, env and flags still win
		}
		ctx, stop := signalContext(cmd.Context())
		defer stop()
		return devstack.Run(ctx, v, *dir, *nodes, cmd.OutOrStdout())
	}
	return cmd
}
