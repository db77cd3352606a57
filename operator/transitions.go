package operator

import (
	"context"
	"slices"
	"sync"
	"time"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// transitionWait is how long a sync waits for the store's answer to its
// state transitions. A healthy MongoDB answers in milliseconds, so the
// pass writes the new state at once; a slow one (up to the store timeout
// per call) would otherwise hold a worker for seconds, and sixteen slow
// crawls would hold them all while unrelated crawls' stops and finishes
// wait in the queue. Past the wait the call goes on in the background and
// its end brings the job back, to a pass that takes the answer.
const transitionWait = 250 * time.Millisecond

// transitionCalls are the store calls of state transitions that outlived
// the pass that started them, by job key.
type transitionCalls struct {
	mu sync.Mutex
	m  map[string]*transitionCall
	wg sync.WaitGroup
}

type transitionCall struct {
	ts      []transition
	done    chan struct{}
	answers []transitionResult
	err     error
}

// forget drops a job's call (the job is gone).
func (tc *transitionCalls) forget(key string) {
	tc.mu.Lock()
	delete(tc.m, key)
	tc.mu.Unlock()
}

// take removes and returns key's call when it is done, else (still in
// flight) returns it and false.
func (tc *transitionCalls) take(key string) (*transitionCall, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	call := tc.m[key]
	if call == nil {
		return nil, true
	}
	select {
	case <-call.done:
		delete(tc.m, key)
		return call, true
	default:
		return call, false
	}
}

// keep gives answers to transitions ts back to the job's next pass, for a
// pass that took them but wrote no status (its charge was still running):
// the status they go into is still the one they were asked from.
func (tc *transitionCalls) keep(key string, ts []transition, answers []transitionResult) {
	done := make(chan struct{})
	close(done)
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil {
		tc.m = map[string]*transitionCall{}
	}
	tc.m[key] = &transitionCall{ts: ts, done: done, answers: answers}
}

// transitionAnswers asks the store for the plan's transitions and returns
// its answers, waiting at most transitionWait for them. With no answer
// yet it returns none and pending: the pass holds its status back (see
// syncAs), and the call's end enqueues the job. Every pass looks at
// the job's finished call: its answers count only for the same
// transitions, asked from the same status (a pass that wants something
// else asks the store again, which holds whatever the call did).
func (c *Controller) transitionAnswers(ctx context.Context, key string, cj *trawlerv1.CrawlJob, ts []transition) ([]transitionResult, bool, error) {
	call, finished := c.calls.take(key)
	switch {
	case !finished:
		return nil, true, nil
	case call != nil && slices.EqualFunc(call.ts, ts, sameTransition):
		return call.answers, false, call.err
	case len(ts) == 0:
		return nil, false, nil
	}
	call = &transitionCall{ts: ts, done: make(chan struct{})}
	c.calls.mu.Lock()
	if c.calls.m == nil {
		c.calls.m = map[string]*transitionCall{}
	}
	c.calls.m[key] = call
	c.calls.mu.Unlock()
	c.calls.wg.Go(func() {
		call.answers, call.err = c.recordTransitions(ctx, cj, ts)
		close(call.done)
		c.calls.mu.Lock()
		detached := c.calls.m[key] == call
		c.calls.mu.Unlock()
		if detached {
			c.enqueue(key, "store-answered")
		}
	})
	t := time.NewTimer(transitionWait)
	defer t.Stop()
	select {
	case <-call.done:
		c.calls.take(key)
		return call.answers, false, call.err
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, true, nil
}

// sameTransition reports whether two transitions ask the same of the
// store.
func sameTransition(a, b transition) bool {
	return a.To == b.To && a.Finished == b.Finished && slices.Equal(a.From, b.From) &&
		(a.Stats == nil) == (b.Stats == nil) && (a.Stats == nil || *a.Stats == *b.Stats)
}
