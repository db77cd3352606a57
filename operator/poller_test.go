package operator

import (
	"testing"
	"time"
)

func TestPollDelay(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		interval, idle time.Duration
		quiet          int
		want           time.Duration
	}{
		{250 * ms, 4 * time.Second, 0, 250 * ms},
		{250 * ms, 4 * time.Second, 3, 250 * ms}, // under a second of quiet
		{250 * ms, 4 * time.Second, 4, 500 * ms}, // a second of quiet
		{250 * ms, 4 * time.Second, 5, time.Second},
		{250 * ms, 4 * time.Second, 7, 4 * time.Second},
		{250 * ms, 4 * time.Second, 100, 4 * time.Second}, // the idle pace at most
		{250 * ms, 3 * time.Second, 7, 3 * time.Second},
		{2 * time.Second, 4 * time.Second, 0, 2 * time.Second},
		{2 * time.Second, 4 * time.Second, 1, 4 * time.Second}, // a round of quiet is more than a second
		{250 * ms, 0, 50, 250 * ms},                            // no idle pace
	} {
		if got := pollDelay(tc.interval, tc.idle, tc.quiet); got != tc.want {
			t.Errorf("pollDelay(%v, %v, %d) = %v, want %v", tc.interval, tc.idle, tc.quiet, got, tc.want)
		}
	}
}
