package operator_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/sandbox/metricstest"
	"github.com/trawlerhq/trawler/store"
)

// TestTelemetry runs a crawl of two crawlers and reads the operator's
// metrics while it runs and after: the managed pods and PVCs and the
// crawl's state from the caches, syncs, workqueue activity, status writes
// and the Redis polls.
func TestTelemetry(t *testing.T) {
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	telemetry, err := operator.NewTelemetry(reg)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := crawlredis.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if v, found := metricstest.Sum(t, reg, "trawler_operator_pods", nil); found {
		t.Fatalf("pods reported (%v) before any controller runs", v)
	}
	cfg := h.config()
	cfg.RedisHook = hook
	deps := h.deps()
	deps.Telemetry = telemetry
	op := h.startOperatorWith(cfg, deps)
	id := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=200&sim-page-ms=200"})
	h.waitPagesDone(id, 10)

	h.waitFor("two running crawlers and a running crawl in the gauges", 30*time.Second, func() bool {
		crawlers, _ := metricstest.Sum(t, reg, "trawler_operator_pods", map[string]string{"role": "crawler", "phase": "Running"})
		redis, _ := metricstest.Sum(t, reg, "trawler_operator_pods", map[string]string{"role": "redis"})
		pvcs, _ := metricstest.Sum(t, reg, "trawler_operator_pvcs", map[string]string{"role": "crawler"})
		running, _ := metricstest.Sum(t, reg, "trawler_operator_crawljobs", map[string]string{"state": store.StateRunning})
		return crawlers == 2 && redis == 1 && pvcs == 2 && running == 1
	})
	for _, m := range []struct {
		name   string
		labels map[string]string
	}{
		{"trawler_operator_reconcile_duration_seconds", map[string]string{"queue": "crawljobs"}},
		{"trawler_operator_crawljob_status_writes_total", map[string]string{"result": "ok"}},
		{"workqueue_adds_total", map[string]string{"name": "crawljobs"}},
		{"workqueue_queue_duration_seconds", map[string]string{"name": "crawljobs"}},
		{"workqueue_work_duration_seconds", map[string]string{"name": "crawljobs"}},
		{"trawler_redis_command_duration_seconds", map[string]string{"command": "pipeline"}},
	} {
		if v, _ := metricstest.Sum(t, reg, m.name, m.labels); v <= 0 {
			t.Errorf("%s%v = %v, want > 0", m.name, m.labels, v)
		}
	}
	if v, found := metricstest.Sum(t, reg, "workqueue_depth", map[string]string{"name": "crawljobs"}); !found || v < 0 {
		t.Errorf("workqueue_depth = %v (found %v)", v, found)
	}

	if err := h.launch.StopCrawl(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	final := h.waitState(id, 2*time.Minute, store.FinishedStates...)
	h.waitFor("the crawl's final state in the gauge, or its job released", 30*time.Second, func() bool {
		v, _ := metricstest.Sum(t, reg, "trawler_operator_crawljobs", map[string]string{"state": final})
		running, _ := metricstest.Sum(t, reg, "trawler_operator_crawljobs", map[string]string{"state": store.StateRunning})
		return running == 0 && (v == 1 || h.gone(id))
	})
	errs, found := metricstest.Sum(t, reg, "trawler_operator_reconcile_errors_total", map[string]string{"queue": "crawljobs"})
	if !found {
		t.Error("no trawler_operator_reconcile_errors_total series for the crawljobs queue")
	}
	if errs > 0 {
		syncs, _ := metricstest.Sum(t, reg, "trawler_operator_reconcile_duration_seconds", nil)
		t.Logf("%v of %v syncs failed and were retried", errs, syncs)
	}

	op.stop()
	if v, found := metricstest.Sum(t, reg, "trawler_operator_pods", nil); found {
		t.Errorf("pods reported (%v) after the controller stopped", v)
	}
}
