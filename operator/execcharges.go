package operator

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// execChargeSlots is how many accounting charges run at once. A charge
// takes two database round trips for its crawl and a share of its org's
// (the store writes an org's waiting charges together), so ten thousand
// running crawls bring about 170 charges and 350 round trips a second
// that a busy database cannot always keep up with. Run in the workers,
// they held all sixteen while every crawl's start, stop and finish
// waited behind them; run in the background without a bound, they would
// take every pooled database connection the state transitions need. A
// charge that waits for its turn still counts every second since its
// crawl's last count: under load the counts come later and larger, none
// is lost.
const execChargeSlots = 4

// execCharges are the accounting ticks' store calls, run off the workers,
// at most one per job at a time, by at most execChargeSlots goroutines;
// the calls waiting for one are a queue (a goroutine each would cost
// about 8 KiB a crawl at ten thousand).
type execCharges struct {
	mu      sync.Mutex
	m       map[string]*execCall
	waiting []*execCall
	running int
	wg      sync.WaitGroup
}

// execCall is one charge. Since is the status clock it counted from: its
// answer holds for a status that still shows that clock, and once the
// status shows the answer's the call is dropped.
type execCall struct {
	key    string
	since  *time.Time
	charge func() (*execAnswer, error)
	back   func()
	done   chan struct{}
	answer *execAnswer
	err    error
	// pauseSeen: a pass took the answer's pause reason; the passes that
	// take the answer again (until its status is written) do not ask for
	// the automatic pause a second time.
	pauseSeen bool
}

func newExecCharges() *execCharges {
	return &execCharges{m: map[string]*execCall{}}
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

// start queues charge for key, to run when one of the slots is free
// (first, if urgent: a pass waits for it); its end calls back (to bring
// the job to a pass that takes the answer).
func (ec *execCharges) start(ctx context.Context, key string, since *time.Time, urgent bool,
	charge func(context.Context) (*execAnswer, error), back func()) *execCall {
	call := &execCall{key: key, since: since, back: back, done: make(chan struct{}),
		charge: func() (*execAnswer, error) { return charge(ctx) }}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	ec.m[key] = call
	if ec.running == execChargeSlots {
		ec.waiting = append(ec.waiting, call)
		if urgent {
			ec.hurryLocked(call)
		}
		return call
	}
	ec.running++
	ec.wg.Go(func() { ec.drain(call) })
	return call
}

// hurry moves a waiting call to the head of the queue (a pass waits for
// it); one already running or done is left as it is.
func (ec *execCharges) hurry(call *execCall) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	ec.hurryLocked(call)
}

func (ec *execCharges) hurryLocked(call *execCall) {
	if i := slices.Index(ec.waiting, call); i > 0 {
		copy(ec.waiting[1:i+1], ec.waiting[:i])
		ec.waiting[0] = call
	}
}

// drain runs call, then the waiting calls in turn until none is left. A
// call whose job is gone meanwhile is not charged.
func (ec *execCharges) drain(call *execCall) {
	for call != nil {
		ec.mu.Lock()
		current := ec.m[call.key] == call
		ec.mu.Unlock()
		if current {
			call.answer, call.err = call.charge()
		}
		close(call.done)
		call.back()
		ec.mu.Lock()
		call = nil
		if len(ec.waiting) > 0 {
			call, ec.waiting = ec.waiting[0], ec.waiting[1:]
		} else {
			ec.running--
		}
		ec.mu.Unlock()
	}
}

// sameClock reports whether a call counted from the status clock lut.
func sameClock(since *time.Time, lut *metav1.Time) bool {
	if since == nil || lut == nil {
		return since == nil && lut == nil
	}
	return since.Equal(lut.Time)
}
