package operator

import (
	"context"
	"slices"
	"sync"
	"time"
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
// about 8 KiB a crawl at ten thousand). It also holds each job's clock:
// when its crawler seconds were last counted. The clock lives here and in
// the crawl document (_lut), not in the CrawlJob status: written there,
// every running crawl's count would be a status write a minute, at ten
// thousand crawls more than the state changes' whole client budget. An
// operator that does not know a job's clock (a new leader) learns it
// from the store.
type execCharges struct {
	mu      sync.Mutex
	m       map[string]*execCall
	clocks  map[string]time.Time
	waiting []*execCall
	running int
	wg      sync.WaitGroup
}

// execCall is one charge.
type execCall struct {
	key    string
	charge func() (*execAnswer, error)
	back   func()
	done   chan struct{}
	answer *execAnswer
	err    error
}

func newExecCharges() *execCharges {
	return &execCharges{m: map[string]*execCall{}, clocks: map[string]time.Time{}}
}

// forget drops a job's call and clock (the job is gone).
func (ec *execCharges) forget(key string) {
	ec.mu.Lock()
	delete(ec.m, key)
	delete(ec.clocks, key)
	ec.mu.Unlock()
}

// clock returns when key's crawler seconds were last counted, nil while
// this operator does not know.
func (ec *execCharges) clock(key string) *time.Time {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	t, ok := ec.clocks[key]
	if !ok {
		return nil
	}
	return &t
}

// take returns key's call and whether it is done. A done call is given
// to one pass, which acts on its answer (the clock already moved with
// it), and dropped. Only a call a pass has something to act on is kept
// once done (settle): one whose answer asks for a pause, or that failed.
func (ec *execCharges) take(key string) (*execCall, bool) {
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
	delete(ec.m, key)
	return call, true
}

// start queues charge for key, to run when one of the slots is free
// (first, if urgent: a pass waits for it). An answer that asks for a
// pause calls back (to bring the job to a pass that takes it); the
// others only move the clock, which the job's next pass reads, so at ten
// thousand crawls the counts bring no passes of their own. A failed
// charge waits for the job's next pass, which counts again.
func (ec *execCharges) start(ctx context.Context, key string, urgent bool,
	charge func(context.Context) (*execAnswer, error), back func()) *execCall {
	call := &execCall{key: key, back: back, done: make(chan struct{}),
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
			ec.settle(call)
		}
		close(call.done)
		if call.answer != nil && call.answer.PauseReason != "" {
			call.back()
		}
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

// settle moves the job's clock to its call's answer and drops a call no
// pass needs to take, if the job is still there.
func (ec *execCharges) settle(call *execCall) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.m[call.key] != call {
		return
	}
	a := call.answer
	if a != nil && !a.LastUpdate.IsZero() {
		ec.clocks[call.key] = a.LastUpdate
	}
	if call.err == nil && (a == nil || a.PauseReason == "") {
		delete(ec.m, call.key)
	}
}
