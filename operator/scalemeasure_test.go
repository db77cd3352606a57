package operator_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scaleRun is what one measured window saw.
type scaleRun struct {
	window       time.Duration
	rss          int64 // the operator's peak
	cpu          time.Duration
	api          map[string]float64 // the API server's requests by "verb resource/subresource"
	op           map[string]int64   // the operator's own requests
	mongo        map[string]int64   // the operator's MongoDB writes by command
	cpuByProcess string
	// latencies are the operator's own: its queues' waits, its syncs,
	// its MongoDB commands (from its histograms), and the causes of its
	// state queue's wakes.
	latencies string
}

// operatorMetricNames are the child operator's histograms and counters
// the scale bench reports.
var operatorMetricNames = []string{"workqueue_queue_duration_seconds", "trawler_operator_reconcile_duration_seconds",
	"trawler_mongo_command_duration_seconds", "trawler_operator_crawljob_wakes_total",
	"trawler_operator_sync_step_seconds", "trawler_operator_progress_wakes_total"}

// measureScale measures the operator over window while during (if set)
// runs; during gets a channel closed when the window ends.
func (h *harness) measureScale(child *childOperator, window time.Duration, during func(stop <-chan struct{})) scaleRun {
	api0, op0, mongo0 := h.apiServerRequests(), child.requests(), child.mongoWrites()
	rss, cpu0 := child.usage()
	procs := cpuByProcess()
	metrics0, metricsErr := child.metrics(operatorMetricNames...)
	stop := make(chan struct{})
	if during != nil {
		during(stop)
	}
	start := time.Now()
	tick := time.NewTicker(5 * time.Second)
	end := time.After(window)
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			r, _ := child.usage()
			rss = max(rss, r)
		case <-end:
			waiting = false
		}
	}
	tick.Stop()
	close(stop)
	r := scaleRun{window: time.Since(start), api: map[string]float64{}, op: map[string]int64{}, mongo: map[string]int64{}}
	var cpu1 time.Duration
	r.rss, cpu1 = child.usage()
	r.rss = max(r.rss, rss)
	r.cpu = cpu1 - cpu0
	r.cpuByProcess = diffCPU(procs, cpuByProcess())
	metrics1, err := child.metrics(operatorMetricNames...)
	if err = errors.Join(metricsErr, err); err != nil {
		r.latencies = "unread: " + err.Error()
	} else {
		r.latencies = metrics1.since(metrics0, r.window)
	}
	for k, v := range h.apiServerRequests() {
		if d := v - api0[k]; d > 0 {
			r.api[k] = d
		}
	}
	for k, v := range child.requests() {
		if d := v - op0[k]; d > 0 {
			r.op[k] = d
		}
	}
	for k, v := range child.mongoWrites() {
		if d := v - mongo0[k]; d > 0 {
			r.mongo[k] = d
		}
	}
	return r
}

func (r scaleRun) secs() float64 { return r.window.Seconds() }

func (r scaleRun) cores() float64 { return r.cpu.Seconds() / r.secs() }

// apiByVerb is the API server's requests per second by verb.
func (r scaleRun) apiByVerb() map[string]float64 {
	out := map[string]float64{}
	for k, v := range r.api {
		verb, _, _ := strings.Cut(k, " ")
		out[verb] += v / r.secs()
	}
	return out
}

func (r scaleRun) apiTotal() float64 {
	var sum float64
	for _, v := range r.apiByVerb() {
		sum += v
	}
	return sum
}

// readVerbs are the API verbs that write nothing.
var readVerbs = map[string]bool{"GET": true, "LIST": true, "WATCH": true}

// apiWrites is the API server's write requests per second.
func (r scaleRun) apiWrites() float64 {
	var sum float64
	for verb, v := range r.apiByVerb() {
		if !readVerbs[verb] {
			sum += v
		}
	}
	return sum
}

func (r scaleRun) apiWriteKinds() string {
	out := map[string]float64{}
	for k, v := range r.api {
		if verb, _, _ := strings.Cut(k, " "); !readVerbs[verb] {
			out[k] = v / r.secs()
		}
	}
	return formatRates(out)
}

// opWrites is the operator's own write requests per second (its counts
// name reads "GET" and "WATCH", writes by verb and resource).
func (r scaleRun) opWrites() float64 {
	var sum float64
	for k, v := range r.op {
		if k != "GET" && k != "WATCH" {
			sum += float64(v)
		}
	}
	return sum / r.secs()
}

func (r scaleRun) opTotal() float64 {
	var sum float64
	for _, v := range r.op {
		sum += float64(v)
	}
	return sum / r.secs()
}

func (r scaleRun) opWriteKinds() string { return formatCounts(r.op, r.secs()) }

func (r scaleRun) mongoRate() float64 {
	var sum float64
	for _, v := range r.mongo {
		sum += float64(v)
	}
	return sum / r.secs()
}

func (r scaleRun) mongoKinds() string { return formatCounts(r.mongo, r.secs()) }

func formatRates(m map[string]float64) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %.2f/s", k, m[k]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func formatCounts(m map[string]int64, secs float64) string {
	rates := map[string]float64{}
	for k, v := range m {
		rates[k] = float64(v) / secs
	}
	return formatRates(rates)
}

// percentile returns the p-th percentile (0..1) of d.
func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// summary is "n=… p50 … p99 … max …" of d.
func summary(d []time.Duration) string {
	if len(d) == 0 {
		return "n=0"
	}
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d p50 %v p99 %v max %v", len(d), r(percentile(d, 0.5)), r(percentile(d, 0.99)), r(percentile(d, 1)))
}

// envInts reads comma-separated integers from the environment, or def.
func envInts(tb testing.TB, name string, def ...int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			tb.Fatalf("%s: %q is not a positive integer", name, f)
		}
		out = append(out, n)
	}
	return out
}

// envDuration reads a duration from the environment, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s: %q is not a positive duration", name, v)
	}
	return d
}
