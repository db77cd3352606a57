package crawlredis

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// metricsHook records the latency and the errors of every call a client
// makes to a crawl's Redis. A pipeline is one call ("pipeline"), as it is
// one round trip; connecting is "dial".
type metricsHook struct {
	duration *prometheus.HistogramVec
	failed   *prometheus.CounterVec
}

// NewMetrics registers the crawl-Redis metrics on reg and returns the hook
// that records them; add it to every client of a crawl's Redis (the API's
// and the operator's) with AddHook:
//
//	trawler_redis_command_duration_seconds{command}  histogram of latency
//	trawler_redis_command_errors_total{command}      failed calls
//
// A missing key and an older crawler's key type are answers the readers
// expect, not errors.
func NewMetrics(reg prometheus.Registerer) (redis.Hook, error) {
	h := metricsHook{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trawler_redis_command_duration_seconds",
			Help:    "Latency of calls to crawls' Redis (a pipeline counts once), by command.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"command"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_redis_command_errors_total",
			Help: "Calls to crawls' Redis that failed (unreachable, timeout, error reply), by command.",
		}, []string{"command"}),
	}
	for _, c := range []prometheus.Collector{h.duration, h.failed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering redis metrics: %w", err)
		}
	}
	return h, nil
}

func (h metricsHook) observe(command string, start time.Time, err error) {
	h.duration.WithLabelValues(command).Observe(time.Since(start).Seconds())
	if err != nil && !IsMissingOrWrongType(err) {
		h.failed.WithLabelValues(command).Inc()
	}
}

func (h metricsHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		start := time.Now()
		conn, err := next(ctx, network, addr)
		h.observe("dial", start, err)
		return conn, err
	}
}

func (h metricsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(cmd.Name(), start, err)
		return err
	}
}

func (h metricsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe("pipeline", start, err)
		return err
	}
}
