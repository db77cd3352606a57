package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/viper"
)

// newLogger builds the process logger from log.level and log.format.
func newLogger(v *viper.Viper, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.GetString("log.level"))); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch f := v.GetString("log.format"); f {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log.format: %q is neither text nor json", f)
	}
}
