package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newDevCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run trawler against a local sandbox cluster (see make dev)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dev: the sandbox is not wired yet")
		},
	}
}
