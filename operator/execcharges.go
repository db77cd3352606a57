package operator

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// execChargeSlots is how many accounting charges run at once. A charge
// takes four database round trips and, within an org, waits for the
// charge before it (the org's counters are read, split and written), so
// ten thousand running crawls bring about 170 charges a second that the
// database cannot always keep up with. Run in the workers, they held all
// sixteen while every crawl's start, stop and finish waited behind them;
// run in the background without a bound, they would take every pooled
// database connection the state transitions need. A charge that waits for
// a slot still counts every second since its crawl's last count: under
// load the counts come later and larger, none is lost.
const execChargeSlots = 4

// execCharges are the accounting ticks' store calls, run off the workers,
// at most one per job at a time.
type execCharges struct {
	slots chan struct{}
	mu    sync.Mutex
	m     map[string]*execCall
	wg    sync.WaitGroup
}

// execCall is one charge. Since is the status clock it counted from: its
// answer holds for a status that still shows that clock, and once the
// status shows the answer's the call is dropped.
type execCall struct {
	since  *time.Time
	done   chan struct{}
	answer *execAnswer
	err    error
	// pauseSeen: a pass took the answer's pause reason; the passes that
	// take the answer again (until its status is written) do not ask for
	// the automatic pause a second time.
	pauseSeen bool
}

func newExecCharges() *execCharges {
	return &execCharges{slots: make(chan struct{}, execChargeSlots), m: map[string]*execCall{}}
}

// forget drops a job's call (the job is gone).
func (ec *execCharges) forget(key string) {
	ec.mu.Lock()
	delete(ec.m, key)
	ec.mu.Unlock()
}

// take returns key's call and whether it is done. A done call counts
// only while the status still shows the clock it counted from (lut): one
// the status has moved past is dropped and not returned, and one that
// failed or has no answer is returned for the last time.
func (ec *execCharges) take(key string, lut *metav1.Time) (*execCall, bool) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	call := ec.m[key]
	if call == nil {
		return nil, true
	}
	select {
	case <-call.done:
	default:
		return call, false
	}
	current := sameClock(call.since, lut)
	if call.err != nil || call.answer == nil || !current {
		delete(ec.m, key)
	}
	if !current {
		return nil, true
	}
	return call, true
}

// answerOnce returns the call's answer, its pause reason only the first
// time.
func (ec *execCharges) answerOnce(call *execCall) *execAnswer {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	a := *call.answer
	if call.pauseSeen {
		a.PauseReason = ""
	}
	call.pauseSeen = true
	return &a
}

// start runs charge for key in the background once a slot is free; its
// end calls back (to bring the job to a pass that takes the answer).
func (ec *execCharges) start(ctx context.Context, key string, since *time.Time,
	charge func(context.Context) (*execAnswer, error), back func()) *execCall {
	call := &execCall{since: since, done: make(chan struct{})}
	ec.mu.Lock()
	ec.m[key] = call
	ec.mu.Unlock()
	ec.wg.Go(func() {
		select {
		case ec.slots <- struct{}{}:
			call.answer, call.err = charge(ctx)
			<-ec.slots
		case <-ctx.Done():
			call.err = ctx.Err()
		}
		close(call.done)
		back()
	})
	return call
}

// sameClock reports whether a call counted from the status clock lut.
func sameClock(since *time.Time, lut *metav1.Time) bool {
	if since == nil || lut == nil {
		return since == nil && lut == nil
	}
	return since.Equal(lut.Time)
}
