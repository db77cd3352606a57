package operator

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestDrainRetriesUntilItsLimit keeps a finished crawl's Redis out of
// reach: the final drain retries with backoff (not 30 s as it once did)
// and gives up only once drainLimit has passed, with a RedisLost Event.
func TestDrainRetriesUntilItsLimit(t *testing.T) {
	f := newFixture(t, newJob(1, withFinalizer), configMap())
	tries := 0
	f.c.cfg.RedisDialer = func(context.Context, string, string) (net.Conn, error) {
		tries++
		return nil, errors.New("redis gone")
	}
	// Each wait of the drain moves the fake clock on by the longest
	// backoff, so each try comes after a full wait.
	waits := make(chan struct{})
	f.c.clock = signalingClock{f.clock, waits}
	done := make(chan struct{})
	start := f.clock.Now()
	go func() {
		defer close(done)
		f.c.drainRedis(context.Background(), newJob(1))
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-waits:
			f.clock.Step(10 * time.Second)
		case <-time.After(30 * time.Second):
			t.Fatalf("drain still retrying after %v of fake time", f.clock.Since(start))
		}
	}
	if gave := f.clock.Since(start); gave < drainLimit {
		t.Errorf("drain gave up after %v, want %v", gave, drainLimit)
	}
	if want := int(drainLimit / (10 * time.Second)); tries < want {
		t.Errorf("%d tries in %v, want at least %d (one per 10 s)", tries, drainLimit, want)
	}
	select {
	case e := <-f.events.Events:
		if !strings.Contains(e, ReasonRedisLost) {
			t.Errorf("event %q, want %s", e, ReasonRedisLost)
		}
	default:
		t.Error("no event when the drain gave up")
	}
}

// signalingClock tells on waits each time After is called.
type signalingClock struct {
	*testingclock.FakeClock
	waits chan<- struct{}
}

func (c signalingClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.waits <- struct{}{}
	return ch
}
