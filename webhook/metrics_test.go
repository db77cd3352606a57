package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// TestDeliveryMetrics: each attempt is counted by event and outcome, with
// its latency.
func TestDeliveryMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	observer, err := webhook.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t, 500)
	h := newHarness(t, r)
	h.deps.Observer = observer
	n, _, _ := h.start(testConfig(func(*webhook.Config) {}))
	h.finished(n, "metered")
	h.wait("first attempt", attempts(1))
	h.clock.Step(time.Minute)
	h.wait("success after a retry", func(n store.Notification) bool { return n.Success })
	want := `
# HELP trawler_webhook_deliveries_total Webhook delivery attempts by event and outcome (success: the receiver answered below 400).
# TYPE trawler_webhook_deliveries_total counter
trawler_webhook_deliveries_total{event="crawlFinished",outcome="failure"} 1
trawler_webhook_deliveries_total{event="crawlFinished",outcome="success"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "trawler_webhook_deliveries_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "trawler_webhook_delivery_duration_seconds"); n != 1 {
		t.Errorf("%d latency series, want the crawlFinished one", n)
	}
	if _, err := webhook.NewMetrics(reg); err == nil {
		t.Error("registering the metrics twice on one registry did not fail")
	}
}
