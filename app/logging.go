package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/viper"
	"k8s.io/klog/v2"
)

// NewLogger builds the process logger from log.level and log.format.
func NewLogger(v *viper.Viper, w io.Writer) (*slog.Logger, error) {
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

// redisLogger sends go-redis's own messages (e.g. "failed to dial" while
// a crawl's Redis pod is not up yet, which is normal) to slog at debug
// level instead of unstructured lines on stderr.
type redisLogger struct{ log *slog.Logger }

// Printf logs one go-redis message.
func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// routeLibraryLogs points the logs of libraries with global loggers
// (client-go's klog, go-redis) at logger, so the process logs one format.
func routeLibraryLogs(logger *slog.Logger) {
	klog.SetSlogLogger(logger)
	redis.SetLogger(redisLogger{logger})
}
