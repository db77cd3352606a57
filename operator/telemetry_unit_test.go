package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trawlerhq/trawler/k8s"
)

func TestStatusWritesByResult(t *testing.T) {
	tel, err := NewTelemetry(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	jobs := schema.GroupResource{Group: "trawler.dev", Resource: "crawljobs"}
	for _, err := range []error{nil, nil, apierrors.NewConflict(jobs, "j", errors.New("changed")),
		apierrors.NewNotFound(jobs, "j"), errors.New("connection refused")} {
		tel.statusWritten(err)
	}
	for result, want := range map[string]float64{"ok": 2, "conflict": 1, "gone": 1, "error": 1} {
		if got := testutil.ToFloat64(tel.statusWrites.WithLabelValues(result)); got != want {
			t.Errorf("status writes %q = %v, want %v", result, got, want)
		}
	}
}

// TestSyncStepsTimeTheKeyLock: a pass that waits for another queue's pass
// of the same job shows the wait as its lock step, apart from its own
// work, which is what tells a slow progress lane's cause.
func TestSyncStepsTimeTheKeyLock(t *testing.T) {
	tel, err := NewTelemetry(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, newJob(1, withFinalizer), configMap())
	f.c.telemetry = tel
	key := "crawlers/" + k8s.CrawlJobName(testID)
	unlock := f.c.locks.lock(key)
	done := make(chan error, 1)
	go func() { done <- f.c.syncProgress(context.Background(), key) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.c.locks.users(key) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the progress pass never waited for the lock")
		}
		time.Sleep(time.Millisecond)
	}
	const held = 50 * time.Millisecond
	time.Sleep(held) // the time measured, not a synchronisation
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	steps := func(step string) *dto.Histogram {
		m := &dto.Metric{}
		if err := tel.steps.WithLabelValues("crawljob-progress", step).(prometheus.Metric).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram()
	}
	if h := steps("lock"); h.GetSampleCount() != 1 || h.GetSampleSum() < held.Seconds() {
		t.Errorf("lock step: %d samples, %.3fs, want 1 of at least %v", h.GetSampleCount(), h.GetSampleSum(), held)
	}
	for _, step := range []string{"observe", "carry-out", "exec", "status"} {
		if h := steps(step); h.GetSampleCount() != 1 {
			t.Errorf("%s step: %d samples, want 1", step, h.GetSampleCount())
		}
	}
}

// users is how many syncs hold or wait for key's lock.
func (l *keyLocks) users(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.m[key]; k != nil {
		return k.users
	}
	return 0
}
