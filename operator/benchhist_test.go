package operator_test

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// histograms are the child operator's histograms, by "metric{label}", as
// cumulative counts per upper bound.
type histograms map[string][]bucket

type bucket struct {
	le    float64
	count float64
}

// histograms scrapes the child's /metrics and keeps the histograms named,
// keyed by name and label values.
func (c *childOperator) histograms(names ...string) (histograms, error) {
	addr, err := os.ReadFile(c.pprof)
	if err != nil {
		return nil, err
	}
	resp, err := http.Get("http://" + string(addr) + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	g, err := metricstest.Parse(resp.Body)
	if err != nil {
		return nil, err
	}
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := histograms{}
	for _, mf := range families {
		if mf.GetType() != dto.MetricType_HISTOGRAM || !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var values []string
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(values, ",") + "}"
			var bs []bucket
			for _, b := range m.GetHistogram().GetBucket() {
				bs = append(bs, bucket{le: b.GetUpperBound(), count: float64(b.GetCumulativeCount())})
			}
			bs = append(bs, bucket{le: math.Inf(1), count: float64(m.GetHistogram().GetSampleCount())})
			out[key] = bs
		}
	}
	return out, nil
}

// since describes what was observed between before and h: per histogram
// with observations, their number and the p50 and p99 estimated as
// Prometheus' histogram_quantile does (linearly inside a bucket).
func (h histograms) since(before histograms) string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(h)) {
		bs := slices.Clone(h[key])
		for i := range bs {
			if i < len(before[key]) {
				bs[i].count -= before[key][i].count
			}
		}
		n := bs[len(bs)-1].count
		if n <= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s n=%g p50 %s p99 %s", key, n, seconds(quantile(0.5, bs)), seconds(quantile(0.99, bs))))
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
