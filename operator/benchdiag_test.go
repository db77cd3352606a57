package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// apiServerProfile starts a CPU profile of the API server lasting secs
// seconds and returns a wait that saves it to $BENCH_PROFILE_DIR/name and
// returns the path ("" with no BENCH_PROFILE_DIR).
func (h *harness) apiServerProfile(name string, secs int) func() string {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return func() string { return "" }
	}
	return profileTo(filepath.Join(dir, name), func() ([]byte, error) {
		return h.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(secs)).DoRaw(context.Background())
	})
}

// windowProfiles starts, with BENCH_PROFILE_DIR set, CPU profiles of the
// operator child and of the API server lasting window (the API server's
// at most 50 s: it ends requests after a minute), and returns a wait that
// saves both and says where they are ("" without BENCH_PROFILE_DIR).
func (h *harness) windowProfiles(child *childOperator, window time.Duration) func() string {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return func() string { return "" }
	}
	secs := max(int(window.Seconds()), 1)
	apiServer := h.apiServerProfile("apiserver-window.pprof", min(secs, 50))
	operator := profileTo(filepath.Join(dir, "operator-window.pprof"), func() ([]byte, error) {
		return child.profile("profile?seconds=" + strconv.Itoa(secs))
	})
	return func() string { return operator() + " " + apiServer() }
}

// profileTo runs fetch in the background and returns a wait that saves
// what it fetched to path and returns path, or the error.
func profileTo(path string, fetch func() ([]byte, error)) func() string {
	done := make(chan string, 1)
	go func() {
		data, err := fetch()
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			path = "error: " + err.Error()
		}
		done <- path
	}()
	return func() string { return <-done }
}

// apiServerRequests reads the API server's request counts (from its
// /metrics) by "verb resource/subresource".
func (h *harness) apiServerRequests() map[string]float64 {
	return h.apiServerRequestsBy(func(l map[string]string) string {
		return l["verb"] + " " + l["resource"] + "/" + l["subresource"]
	})
}

// apiServerRequestsBy reads the API server's request counts, summed by
// the key key makes of each series' labels.
func (h *harness) apiServerRequestsBy(key func(labels map[string]string) string) map[string]float64 {
	h.t.Helper()
	data, err := h.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	g, err := metricstest.Parse(bytes.NewReader(data))
	if err != nil {
		h.t.Fatal(err)
	}
	families, err := g.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[key(l)] += m.GetCounter().GetValue()
		}
	}
	return out
}

// diffCounts lists what grew from a to b, in key order.
func diffCounts(a, b map[string]float64) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if d := b[k] - a[k]; d > 0 {
			out = append(out, fmt.Sprintf("%s:%g", k, d))
		}
	}
	return strings.Join(out, " ")
}

// procCPU is a process's command name and the CPU time it has used.
type procCPU struct {
	name string
	cpu  time.Duration
}

// procStat reads a process's command name and the CPU time (user and
// system) it has used, from /proc/<pid>/stat.
func procStat(pid int) (name string, cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	// utime and stime are the 12th and 13th fields after the name.
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return "", 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return s[open+1 : end], time.Duration(ut+st) * time.Second / 100, true
}

// cpuByProcess reads the CPU time every process on the machine has used,
// by pid.
func cpuByProcess() map[int]procCPU {
	out := map[int]procCPU{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if name, cpu, ok := procStat(pid); ok {
			out[pid] = procCPU{name: name, cpu: cpu}
		}
	}
	return out
}

// diffCPU lists the CPU each process (by name; kernel threads left out)
// used between two readings, where it was at least 20 ms.
func diffCPU(a, b map[int]procCPU) string {
	used := map[string]time.Duration{}
	for pid, p := range b {
		if !strings.HasPrefix(p.name, "kworker") {
			used[p.name] += p.cpu - a[pid].cpu
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if used[name] >= 20*time.Millisecond {
			out = append(out, fmt.Sprintf("%s %v", name, used[name]))
		}
	}
	return strings.Join(out, ", ")
}
