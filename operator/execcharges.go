package operator

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
)

// execChargeSlots is how many batches of accounting charges run at once,
// and execChargeBatch how many charges one batch takes. Ten thousand
// running crawls bring about 170 charges a second. Run in the workers,
// they held all sixteen while every crawl's start, stop and finish
// waited behind them; run one by one in the background, their two
// database round trips each kept the database busy enough that the
// state transitions waited all the same. A batch is one read and one
// write of its crawls (and one charge per org), and the charges that
// arrive while the slots are busy wait for the next batch: the slower
// the database, the larger the batches, the fewer the round trips. The
// bound keeps a batch's write short: a database that writes one thing
// at a time (the sandbox's) holds every state transition behind it. A
// charge that waits still counts every second since its crawl's last
// count: under load the counts come later and larger, none is lost.
const (
	execChargeSlots = 2
	execChargeBatch = 100
)

// execCharges are the accounting ticks' store calls, run off the workers
// in batches (execChargeSlots), at most one per job at a time; the calls
// waiting for a slot are a queue (a goroutine each would cost about
// 8 KiB a crawl at ten thousand). It also holds each job's clock: when
// its crawler seconds were last counted. The clock lives here and in the
// crawl document (_lut), not in the CrawlJob status: written there, every
// running crawl's count would be a status write a minute, at ten thousand
// crawls more than the state changes' whole client budget. An operator
// that does not know a job's clock (a new leader) learns it from the
// store.
type execCharges struct {
	// charge runs a batch of calls, giving each its answer or error.
	charge func(context.Context, []*execCall)

	mu      sync.Mutex
	m       map[string]*execCall
	clocks  map[string]execClock
	waiting []*execCall
	running int
	wg      sync.WaitGroup
}

// execCall is one charge: a tick of the crawl crawlID, counted at now
// over the pass's crawler pods, with the crawl's pending pages (for the
// storage quota check).
type execCall struct {
	key     string
	ctx     context.Context
	crawlID string
	oid     uuid.UUID
	tick    execTick
	pods    map[int]*corev1.Pod
	now     time.Time
	pending int64
	// back brings the job to a pass, when the answer asks for a pause or
	// a pass gave up waiting for it (awaited); err is the call's.
	back    func(err error)
	awaited bool
	done    chan struct{}
	answer  *execAnswer
	err     error
}

func newExecCharges(charge func(context.Context, []*execCall)) *execCharges {
	return &execCharges{charge: charge, m: map[string]*execCall{}, clocks: map[string]execClock{}}
}

// forget drops a job's call and clock (the job is gone).
func (ec *execCharges) forget(key string) {
	ec.mu.Lock()
	delete(ec.m, key)
	delete(ec.clocks, key)
	ec.mu.Unlock()
}

// execClock is when a job's crawler seconds were last counted, and when
// its org was last read and had no quota to enforce (zero: it had one,
// or the count read no org).
type execClock struct {
	at          time.Time
	quotaFreeAt time.Time
}

// clock returns when key's crawler seconds were last counted (nil while
// this operator does not know) and when its org was last seen without
// a quota (execClock).
func (ec *execCharges) clock(key string) (*time.Time, time.Time) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	c, ok := ec.clocks[key]
	if !ok {
		return nil, time.Time{}
	}
	return &c.at, c.quotaFreeAt
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

// start queues call (its key, its tick and what the tick counts are
// set; ctx is the controller's, the same for every call) to run in the
// next batch a slot takes (first, if urgent: a pass waits for it). An
// answer that asks for a pause calls back (to bring the job to a pass
// that takes it), and so does the end of a call a pass gave up waiting
// for (await); the others only move the clock, which the job's next
// pass reads, so at ten thousand crawls the counts bring no passes of
// their own. A failed charge waits for the job's next pass, which counts
// again.
func (ec *execCharges) start(ctx context.Context, call *execCall, urgent bool, back func(error)) {
	call.ctx, call.back, call.done = ctx, back, make(chan struct{})
	ec.mu.Lock()
	defer ec.mu.Unlock()
	ec.m[call.key] = call
	if ec.running == execChargeSlots {
		ec.waiting = append(ec.waiting, call)
		if urgent {
			ec.hurryLocked(call)
		}
		return
	}
	ec.running++
	ec.wg.Go(func() { ec.drain([]*execCall{call}) })
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

// await waits up to d for call, and reports whether it is done; if not,
// the call's end calls back.
func (ec *execCharges) await(ctx context.Context, call *execCall, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-call.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	ec.mu.Lock()
	defer ec.mu.Unlock()
	select {
	case <-call.done:
		return true
	default:
		call.awaited = true
		return false
	}
}

// drain runs batch, then batches of the waiting calls in turn until none
// is left. A call whose job is gone meanwhile is not charged.
func (ec *execCharges) drain(batch []*execCall) {
	for len(batch) > 0 {
		if current := ec.current(batch); len(current) > 0 {
			ec.charge(current[0].ctx, current)
			for _, call := range current {
				ec.settle(call)
			}
		}
		for _, call := range batch {
			close(call.done)
			ec.mu.Lock()
			back := call.awaited || call.answer != nil && call.answer.PauseReason != ""
			ec.mu.Unlock()
			if back {
				call.back(call.err)
			}
		}
		batch = ec.next()
	}
}

// current returns the calls of batch whose jobs are still there.
func (ec *execCharges) current(batch []*execCall) []*execCall {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(batch), func(call *execCall) bool { return ec.m[call.key] != call })
}

// next takes the next batch off the queue, or gives the slot back when
// none is waiting.
func (ec *execCharges) next() []*execCall {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	n := min(len(ec.waiting), execChargeBatch)
	if n == 0 {
		ec.running--
		return nil
	}
	batch := slices.Clone(ec.waiting[:n])
	ec.waiting = slices.Delete(ec.waiting, 0, n)
	return batch
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
		ec.clocks[call.key] = execClock{at: a.LastUpdate, quotaFreeAt: a.QuotaFreeAt}
	}
	if call.err == nil && (a == nil || a.PauseReason == "") {
		delete(ec.m, call.key)
	}
}
