package webhook

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// promObserver counts delivery attempts for Prometheus.
type promObserver struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the webhook delivery metrics on reg and returns the
// Observer that records them (pass it in Deps.Observer):
//
//	trawler_webhook_deliveries_total{event, outcome}      attempts, outcome
//	                                                      "success" or "failure"
//	trawler_webhook_delivery_duration_seconds{event}      latency of an attempt
func NewMetrics(reg prometheus.Registerer) (Observer, error) {
	o := promObserver{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_webhook_deliveries_total",
			Help: "Webhook delivery attempts by event and outcome (success: the receiver answered below 400).",
		}, []string{"event", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trawler_webhook_delivery_duration_seconds",
			Help:    "Latency of webhook delivery attempts by event, until the receiver answered or the attempt timed out.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"event"}),
	}
	for _, c := range []prometheus.Collector{o.attempts, o.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering webhook metrics: %w", err)
		}
	}
	return o, nil
}

func (o promObserver) ObserveDelivery(event string, success bool, took time.Duration) {
	outcome := "failure"
	if success {
		outcome = "success"
	}
	// The latency first: a scrape that sees the attempt counted then sees
	// its latency too.
	o.duration.WithLabelValues(event).Observe(took.Seconds())
	o.attempts.WithLabelValues(event, outcome).Inc()
}
