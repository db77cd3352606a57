package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// perCall is a batch charge that answers each call with f.
func perCall(f func(*execCall) (*execAnswer, error)) func(context.Context, []*execCall) {
	return func(_ context.Context, calls []*execCall) {
		for _, call := range calls {
			call.answer, call.err = f(call)
		}
	}
}

// startCall starts a charge of key.
func startCall(ec *execCharges, key string, urgent bool, back func(error)) *execCall {
	call := &execCall{key: key, crawlID: key}
	ec.start(context.Background(), call, urgent, back)
	return call
}

// TestExecCharges: a charge's answer moves the job's clock; one that asks
// for a pause brings the job back and is given to one pass, one that
// only moves the clock is dropped; a failed charge is given once and
// leaves the clock, so the next tick charges again; a job forgotten
// while its charge runs keeps no clock.
func TestExecCharges(t *testing.T) {
	later := t0.Add(time.Minute)
	var answer *execAnswer
	var fail error
	var release chan struct{}
	ec := newExecCharges(perCall(func(*execCall) (*execAnswer, error) { <-release; return answer, fail }))
	// run charges key with answer a or err and reports whether the
	// charge brought the job back.
	run := func(key string, a *execAnswer, err error, during func()) bool {
		answer, fail, release = a, err, make(chan struct{})
		back := make(chan struct{}, 1)
		call := startCall(ec, key, false, func(error) { back <- struct{}{} })
		during()
		close(release)
		<-call.done
		ec.wg.Wait()
		return len(back) == 1
	}

	if c, _ := ec.clock("ns/job"); c != nil {
		t.Fatalf("clock %v before any charge, want none", c)
	}
	if back := run("ns/job", &execAnswer{LastUpdate: t0}, nil, func() {}); back {
		t.Fatal("a charge that only moved the clock brought the job back")
	}
	if c, _ := ec.clock("ns/job"); c == nil || !c.Equal(t0) {
		t.Fatalf("clock %v after the charge, want %v", c, t0)
	}
	if call, done := ec.take("ns/job"); call != nil || !done {
		t.Fatalf("take after a charge that only moved the clock: call %v, done %v; want none", call, done)
	}

	if back := run("ns/job", &execAnswer{LastUpdate: later, PauseReason: store.StatePausedTimeQuota}, nil, func() {}); !back {
		t.Fatal("a charge that asks for a pause did not bring the job back")
	}
	if c, _ := ec.clock("ns/job"); c == nil || !c.Equal(later) {
		t.Fatalf("clock %v after the charge, want %v", c, later)
	}
	call, done := ec.take("ns/job")
	if call == nil || !done || call.answer.PauseReason != store.StatePausedTimeQuota {
		t.Fatalf("take: call %v, done %v; want the done call with its pause", call, done)
	}
	if call, done := ec.take("ns/job"); call != nil || !done {
		t.Fatalf("second take: call %v, done %v; want none", call, done)
	}

	run("ns/job", nil, errors.New("store down"), func() {})
	if call, _ := ec.take("ns/job"); call == nil || call.err == nil {
		t.Fatalf("failed call: %v, want it with its error", call)
	}
	if call, _ := ec.take("ns/job"); call != nil {
		t.Fatal("a failed call was given twice")
	}
	if c, _ := ec.clock("ns/job"); c == nil || !c.Equal(later) {
		t.Fatalf("clock %v after a failed charge, want it kept at %v", c, later)
	}

	run("ns/gone", &execAnswer{LastUpdate: later}, nil, func() { ec.forget("ns/gone") })
	if c, _ := ec.clock("ns/gone"); c != nil {
		t.Fatalf("a job forgotten during its charge has clock %v", c)
	}
}

// TestExecChargesInFlight: a call not done yet is returned as in flight.
func TestExecChargesInFlight(t *testing.T) {
	release := make(chan struct{})
	ec := newExecCharges(perCall(func(*execCall) (*execAnswer, error) { <-release; return &execAnswer{}, nil }))
	call := startCall(ec, "ns/job", false, func(error) {})
	if got, done := ec.take("ns/job"); got != call || done {
		t.Fatalf("in flight: call %v, done %v", got, done)
	}
	close(release)
	<-call.done
}

// TestExecChargesAwait: a pass waits a short while for its charge; one
// done in time brings no pass of its own, one a pass gave up on brings the
// job back when it ends, with its error.
func TestExecChargesAwait(t *testing.T) {
	ec := newExecCharges(perCall(func(*execCall) (*execAnswer, error) { return &execAnswer{}, nil }))
	backs := make(chan error, 2)
	quick := startCall(ec, "ns/quick", true, func(err error) { backs <- err })
	if !ec.await(context.Background(), quick, time.Minute) {
		t.Fatal("a charge done in time: not done")
	}

	release := make(chan struct{})
	fail := errors.New("store down")
	ec = newExecCharges(perCall(func(*execCall) (*execAnswer, error) { <-release; return nil, fail }))
	slow := startCall(ec, "ns/slow", true, func(err error) { backs <- err })
	if ec.await(context.Background(), slow, 10*time.Millisecond) {
		t.Fatal("a charge still running: done")
	}
	close(release)
	select {
	case err := <-backs:
		if !errors.Is(err, fail) {
			t.Fatalf("the slow charge called back with %v, want its error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the charge a pass gave up on did not call back")
	}
	ec.wg.Wait()
	select {
	case err := <-backs:
		t.Fatalf("another call back (%v): the quick charge brought a pass", err)
	default:
	}
}

// TestExecChargesBatches: however many calls are started, at most
// execChargeSlots batches run at once; the calls that arrive meanwhile
// wait and go together, at most execChargeBatch in one batch; every one
// runs, and one whose job is gone meanwhile is not charged.
func TestExecChargesBatches(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	var sizes []int
	release := make(chan struct{})
	ec := newExecCharges(func(_ context.Context, calls []*execCall) {
		mu.Lock()
		running++
		most = max(most, running)
		sizes = append(sizes, len(calls))
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		for _, call := range calls {
			call.answer = &execAnswer{}
		}
	})
	calls := make([]*execCall, execChargeSlots+execChargeBatch+10)
	for i := range calls {
		calls[i] = startCall(ec, fmt.Sprintf("ns/job-%d", i), false, func(error) {})
	}
	ec.forget("ns/job-" + fmt.Sprint(len(calls)-1))
	close(release)
	for i, call := range calls[:len(calls)-1] {
		<-call.done
		if call.answer == nil {
			t.Fatalf("call %d: no answer", i)
		}
	}
	ec.wg.Wait()
	if most > execChargeSlots {
		t.Fatalf("%d batches ran at once, want at most %d", most, execChargeSlots)
	}
	slices.Sort(sizes)
	if want := append(slices.Repeat([]int{1}, execChargeSlots), 9, execChargeBatch); !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
	if calls[len(calls)-1].answer != nil {
		t.Fatal("the call of a job gone before its batch ran was charged")
	}
}

// TestExecChargesUrgentFirst: a charge a pass waits for goes ahead of the
// periodic ones waiting for a slot, and so does one hurried later.
func TestExecChargesUrgentFirst(t *testing.T) {
	release := make(chan struct{})
	ec := newExecCharges(perCall(func(*execCall) (*execAnswer, error) { <-release; return &execAnswer{}, nil }))
	var queued []*execCall
	for i := range execChargeSlots + 2 {
		call := startCall(ec, fmt.Sprintf("ns/job-%d", i), false, func(error) {})
		if i >= execChargeSlots {
			queued = append(queued, call)
		}
	}
	urgent := startCall(ec, "ns/urgent", true, func(error) {})
	ec.mu.Lock()
	head := ec.waiting[0]
	ec.mu.Unlock()
	if head != urgent {
		t.Fatal("an urgent charge is not at the head of the queue")
	}
	ec.hurry(queued[1])
	ec.mu.Lock()
	order := slices.Clone(ec.waiting)
	ec.mu.Unlock()
	if want := []*execCall{queued[1], urgent, queued[0]}; !slices.Equal(order, want) {
		t.Fatalf("queue after hurry: %v, want %v", order, want)
	}
	close(release)
	<-urgent.done
}
