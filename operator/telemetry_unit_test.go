package operator

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
