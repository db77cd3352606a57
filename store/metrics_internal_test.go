package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.mongodb.org/mongo-driver/v2/event"
)

func TestCommandMetricsCountFailures(t *testing.T) {
	reg := prometheus.NewRegistry()
	monitor, err := commandMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	finished := func(name string) event.CommandFinishedEvent {
		return event.CommandFinishedEvent{CommandName: name, Duration: 3 * time.Millisecond}
	}
	monitor.Succeeded(ctx, &event.CommandSucceededEvent{CommandFinishedEvent: finished("find")})
	monitor.Failed(ctx, &event.CommandFailedEvent{CommandFinishedEvent: finished("update"), Failure: errors.New("boom")})
	if n := testutil.CollectAndCount(reg, "trawler_mongo_command_duration_seconds"); n != 2 {
		t.Errorf("%d latency series, want find and update", n)
	}
	want := `
# HELP trawler_mongo_command_errors_total MongoDB commands that failed (server errors, timeouts, network), by command name.
# TYPE trawler_mongo_command_errors_total counter
trawler_mongo_command_errors_total{command="update"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "trawler_mongo_command_errors_total"); err != nil {
		t.Error(err)
	}
}
