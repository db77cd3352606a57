package devstack

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// Run is `trawler dev`: it starts the stack in dir with nodes simulated
// nodes, writes dir/env, tells out where everything is and runs until ctx
// ends; then everything stops.
func Run(ctx context.Context, v *viper.Viper, dir string, nodes int, out io.Writer) error {
	logger, err := app.NewLogger(v, os.Stderr)
	if err != nil {
		return err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", dir, err)
	}
	fmt.Fprintf(out, "starting the sandbox in %s ...\n", filepath.Join(dir, "sandbox"))
	stack, err := Start(ctx, v, dir, sandbox.Options{Nodes: kubelet.Nodes{Count: nodes}}, logger)
	if err != nil {
		return err
	}
	defer stack.Env.Stop()
	envFile := filepath.Join(dir, "env")
	if err := WriteEnv(envFile, stack.EnvVars(v)); err != nil {
		return err
	}
	fmt.Fprintf(out, "trawler is up (sandbox started in %s)\n  dashboard and API: %s  (log in as %s / %s)\n  e-mails: %s\n  env: source %s\n  Ctrl-C stops everything\n",
		stack.Env.StartDuration.Round(100*time.Millisecond), stack.APIURL, v.GetString("superuser.email"),
		v.GetString("superuser.password"), stack.Env.MailpitURL(), envFile)
	err = <-stack.Served
	fmt.Fprintln(out, "stopping the sandbox ...")
	return err
}
