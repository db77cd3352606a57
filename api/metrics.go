package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the API's Prometheus metrics: requests by route
// template and status with their latency, and the live event streams.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// streams counts open event streams; feeds counts the crawls they
	// watch (one store reader each, whatever the number of streams).
	streams prometheus.Gauge
	feeds   prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_http_requests_total",
			Help: "HTTP requests by method, route template (e.g. /api/orgs/:oid/crawls) and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trawler_http_request_duration_seconds",
			Help:    "Latency of HTTP requests by method and route template (event streams excluded: they last as long as the client stays).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trawler_crawl_event_streams",
			Help: "Open crawl event streams (GET /api/orgs/:oid/crawls/:crawl_id/events).",
		}),
		feeds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trawler_crawl_event_feeds",
			Help: "Crawls watched for event streams; each is read once per poll however many streams follow it.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.streams, m.feeds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering http metrics: %w", err)
		}
	}
	return m, nil
}

// unmatchedRoute labels requests no route matched, so that probing
// random paths cannot grow the number of series.
const unmatchedRoute = "unmatched"

// observe records one finished request.
func (m *httpMetrics) observe(method, route string, code int, took time.Duration, streaming bool) {
	if route == "" {
		route = unmatchedRoute
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	if !streaming {
		m.duration.WithLabelValues(method, route).Observe(took.Seconds())
	}
}

// countRequests is the echo middleware recording every API request. It
// runs outside logRequests, which writes error responses, so it sees the
// final status.
func (s *Server) countRequests(streaming map[string]bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			route := c.Path() // "" when no route matched
			s.metrics.observe(c.Request().Method, route, c.Response().Status, time.Since(start), streaming[route])
			return err
		}
	}
}

// Instrument records the requests of a handler served next to the API
// (the dashboard's files, /metrics) under the route template route.
func (s *Server) Instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		s.metrics.observe(r.Method, route, rec.status, time.Since(start), false)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
