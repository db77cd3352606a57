package e2etest

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/devstack"
)

// DevConfig is the configuration `trawler dev` runs with (the settings'
// defaults, then devstack.Defaults, the default crawler channel speaking
// the protocol sandbox.TestCrawlerProtocol chooses), with the API on a
// free port and overrides set on top.
func DevConfig(overrides map[string]any) (*viper.Viper, error) {
	v, err := app.LoadConfig("", pflag.NewFlagSet("e2e", pflag.ContinueOnError))
	if err != nil {
		return nil, fmt.Errorf("loading the configuration: %w", err)
	}
	for key, value := range devstack.Defaults {
		v.SetDefault(key, value)
	}
	v.SetDefault("crawler.channels", devstack.Channels(sandbox.TestCrawlerProtocol()))
	v.Set("api.listen", "127.0.0.1:0")
	for key, value := range overrides {
		v.Set(key, value)
	}
	return v, nil
}

// Stack is the development stack running in the test's process, so that
// tests can reach into its sandbox (stop MongoDB, read pod logs, ...).
type Stack struct {
	*devstack.Stack
	// Config is trawler's configuration, as serve completed it.
	Config *viper.Viper
	cancel context.CancelFunc
}

// StartStack starts the development stack in dir with configuration v
// (see DevConfig), trawler logging to logger. Stop stops it.
func StartStack(v *viper.Viper, dir string, opts sandbox.Options, logger *slog.Logger) (*Stack, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := devstack.Start(ctx, v, dir, opts, logger)
	if err != nil {
		cancel()
		return nil, err
	}
	return &Stack{Stack: s, Config: v, cancel: cancel}, nil
}

// Stop stops serve, then the sandbox, and returns serve's error.
func (s *Stack) Stop() error {
	s.cancel()
	err := <-s.Served
	s.Env.Stop()
	return err
}
