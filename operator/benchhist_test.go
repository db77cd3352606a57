package operator_test

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// operatorMetrics are the child operator's histograms, as cumulative
// counts per upper bound, and its counters, each by "metric{labels}".
type operatorMetrics struct {
	hist   map[string][]bucket
	counts map[string]float64
}

type bucket struct {
	le    float64
	count float64
}

// metrics scrapes the child's /metrics and keeps the histograms and
// counters named, keyed by name and label values.
func (c *childOperator) metrics(names ...string) (operatorMetrics, error) {
	out := operatorMetrics{hist: map[string][]bucket{}, counts: map[string]float64{}}
	addr, err := os.ReadFile(c.pprof)
	if err != nil {
		return out, err
	}
	resp, err := http.Get("http://" + string(addr) + "/metrics")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	g, err := metricstest.Parse(resp.Body)
	if err != nil {
		return out, err
	}
	families, err := g.Gather()
	if err != nil {
		return out, err
	}
	for _, mf := range families {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var values []string
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(values, ",") + "}"
			if mf.GetType() == dto.MetricType_COUNTER {
				out.counts[key] = m.GetCounter().GetValue()
				continue
			}
			if mf.GetType() != dto.MetricType_HISTOGRAM {
				continue
			}
			var bs []bucket
			for _, b := range m.GetHistogram().GetBucket() {
				bs = append(bs, bucket{le: b.GetUpperBound(), count: float64(b.GetCumulativeCount())})
			}
			bs = append(bs, bucket{le: math.Inf(1), count: float64(m.GetHistogram().GetSampleCount())})
			out.hist[key] = bs
		}
	}
	return out, nil
}

// since describes what was observed in the window between before and m:
// per histogram with observations, their number and the p50 and p99
// estimated as Prometheus' histogram_quantile does (linearly inside a
// bucket); per counter that moved, its increase and rate, largest first.
func (m operatorMetrics) since(before operatorMetrics, window time.Duration) string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(m.hist)) {
		bs := slices.Clone(m.hist[key])
		for i := range bs {
			if i < len(before.hist[key]) {
				bs[i].count -= before.hist[key][i].count
			}
		}
		n := bs[len(bs)-1].count
		if n <= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s n=%g p50 %s p99 %s", key, n, seconds(quantile(0.5, bs)), seconds(quantile(0.99, bs))))
	}
	moved := map[string]float64{}
	for key, v := range m.counts {
		if d := v - before.counts[key]; d > 0 {
			moved[key] = d
		}
	}
	keys := slices.SortedFunc(maps.Keys(moved), func(a, b string) int { return cmp.Compare(moved[b], moved[a]) })
	for _, key := range keys {
		out = append(out, fmt.Sprintf("%s +%g (%.1f/s)", key, moved[key], moved[key]/window.Seconds()))
	}
	return strings.Join(out, "; ")
}

// quantile estimates the q-quantile of cumulative buckets; above the last
// finite bound it answers that bound.
func quantile(q float64, bs []bucket) float64 {
	rank := q * bs[len(bs)-1].count
	lower, below := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lower
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}

func seconds(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.2fs", s)
	case s >= 0.001:
		return fmt.Sprintf("%.1fms", s*1e3)
	}
	return fmt.Sprintf("%.0fµs", s*1e6)
}
