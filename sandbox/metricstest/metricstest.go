// Package metricstest reads Prometheus metrics in tests: from a registry
// the test built, or from a scraped /metrics body.
package metricstest

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sum adds up the samples of metric name in g whose labels include want:
// counter and gauge values, a histogram's observation count. The suffixes
// _count and _sum of a histogram's name read its count or its sum, as they
// appear in the text format. found reports whether any sample matched.
func Sum(tb testing.TB, g prometheus.Gatherer, name string, want map[string]string) (sum float64, found bool) {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	families := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		families[mf.GetName()] = mf
	}
	family, part := name, ""
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if ok && families[base].GetType() == dto.MetricType_HISTOGRAM {
			family, part = base, suffix
		}
	}
samples:
	for _, m := range families[family].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue samples
			}
		}
		found = true
		switch {
		case part == "_sum":
			sum += m.GetHistogram().GetSampleSum()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// Parse reads a /metrics body in the text format as a Gatherer for Sum.
func Parse(r io.Reader) (prometheus.Gatherer, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		out := make([]*dto.MetricFamily, 0, len(families))
		for _, mf := range families {
			out = append(out, mf)
		}
		return out, nil
	}), nil
}
