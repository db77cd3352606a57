package store

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// An Option changes how Open connects.
type Option func(*options.ClientOptions) error

// WithMetrics records every command the store sends, as the driver sees
// it, on reg:
//
//	trawler_mongo_command_duration_seconds{command}  histogram of latency;
//	                                                 its _count is the calls
//	trawler_mongo_command_errors_total{command}      commands that failed
//
// Counting at the driver counts every call of every caller of the store,
// so it is also how tests measure the store load a feature causes.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(o *options.ClientOptions) error {
		monitor, err := commandMetrics(reg)
		if err != nil {
			return err
		}
		o.SetMonitor(monitor)
		return nil
	}
}

// commandMetrics registers the command metrics and returns the monitor
// that records them.
func commandMetrics(reg prometheus.Registerer) (*event.CommandMonitor, error) {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "trawler_mongo_command_duration_seconds",
		Help:    "Latency of MongoDB commands sent by the store, by command name.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"command"})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trawler_mongo_command_errors_total",
		Help: "MongoDB commands that failed (server errors, timeouts, network), by command name.",
	}, []string{"command"})
	for _, c := range []prometheus.Collector{duration, failed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering mongo metrics: %w", err)
		}
	}
	return &event.CommandMonitor{
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			duration.WithLabelValues(e.CommandName).Observe(e.Duration.Seconds())
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			duration.WithLabelValues(e.CommandName).Observe(e.Duration.Seconds())
			failed.WithLabelValues(e.CommandName).Inc()
		},
	}, nil
}
