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

// TestExecCharges: a charge's answer moves the job's clock; one that asks
// for a pause brings the job back and is given to one pass, one that
// only moves the clock is dropped; a failed charge is given once and
// leaves the clock, so the next tick charges again; a job forgotten
// while its charge runs keeps no clock.
func TestExecCharges(t *testing.T) {
	later := t0.Add(time.Minute)
	// run charges key with answer a or err and reports whether the
	// charge brought the job back.
	run := func(ec *execCharges, key string, a *execAnswer, err error, during func()) bool {
		back, release := make(chan struct{}, 1), make(chan struct{})
		call := ec.start(context.Background(), key, false,
			func(context.Context) (*execAnswer, error) { <-release; return a, err }, func() { back <- struct{}{} })
		during()
		close(release)
		<-call.done
		ec.wg.Wait()
		return len(back) == 1
	}

	ec := newExecCharges()
	if c := ec.clock("ns/job"); c != nil {
		t.Fatalf("clock %v before any charge, want none", c)
	}
	if back := run(ec, "ns/job", &execAnswer{LastUpdate: t0}, nil, func() {}); back {
		t.Fatal("a charge that only moved the clock brought the job back")
	}
	if c := ec.clock("ns/job"); c == nil || !c.Equal(t0) {
		t.Fatalf("clock %v after the charge, want %v", c, t0)
	}
	if call, done := ec.take("ns/job"); call != nil || !done {
		t.Fatalf("take after a charge that only moved the clock: call %v, done %v; want none", call, done)
	}

	if back := run(ec, "ns/job", &execAnswer{LastUpdate: later, PauseReason: store.StatePausedTimeQuota}, nil, func() {}); !back {
		t.Fatal("a charge that asks for a pause did not bring the job back")
	}
	if c := ec.clock("ns/job"); c == nil || !c.Equal(later) {
		t.Fatalf("clock %v after the charge, want %v", c, later)
	}
	call, done := ec.take("ns/job")
	if call == nil || !done || call.answer.PauseReason != store.StatePausedTimeQuota {
		t.Fatalf("take: call %v, done %v; want the done call with its pause", call, done)
	}
	if call, done := ec.take("ns/job"); call != nil || !done {
		t.Fatalf("second take: call %v, done %v; want none", call, done)
	}

	run(ec, "ns/job", nil, errors.New("store down"), func() {})
	if call, _ := ec.take("ns/job"); call == nil || call.err == nil {
		t.Fatalf("failed call: %v, want it with its error", call)
	}
	if call, _ := ec.take("ns/job"); call != nil {
		t.Fatal("a failed call was given twice")
	}
	if c := ec.clock("ns/job"); c == nil || !c.Equal(later) {
		t.Fatalf("clock %v after a failed charge, want it kept at %v", c, later)
	}

	run(ec, "ns/gone", &execAnswer{LastUpdate: later}, nil, func() { ec.forget("ns/gone") })
	if c := ec.clock("ns/gone"); c != nil {
		t.Fatalf("a job forgotten during its charge has clock %v", c)
	}
}

// TestExecChargesInFlight: a call not done yet is returned as in flight.
func TestExecChargesInFlight(t *testing.T) {
	ec := newExecCharges()
	release := make(chan struct{})
	call := ec.start(context.Background(), "ns/job", false, func(context.Context) (*execAnswer, error) {
		<-release
		return &execAnswer{}, nil
	}, func() {})
	if got, done := ec.take("ns/job"); got != call || done {
		t.Fatalf("in flight: call %v, done %v", got, done)
	}
	close(release)
	<-call.done
}

// TestExecChargesSlots: however many calls are started, at most
// execChargeSlots run at once, and every one runs.
func TestExecChargesSlots(t *testing.T) {
	ec := newExecCharges()
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	calls := make([]*execCall, 3*execChargeSlots)
	for i := range calls {
		calls[i] = ec.start(context.Background(), fmt.Sprintf("ns/job-%d", i), false, func(context.Context) (*execAnswer, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return &execAnswer{}, nil
		}, func() {})
	}
	close(release)
	for i, call := range calls {
		<-call.done
		if call.answer == nil {
			t.Fatalf("call %d: no answer", i)
		}
	}
	if most > execChargeSlots {
		t.Fatalf("%d charges ran at once, want at most %d", most, execChargeSlots)
	}
}

// TestExecChargesUrgentFirst: a charge a pass waits for goes ahead of the
// periodic ones waiting for a slot, and so does one hurried later.
func TestExecChargesUrgentFirst(t *testing.T) {
	ec := newExecCharges()
	release := make(chan struct{})
	block := func(context.Context) (*execAnswer, error) { <-release; return &execAnswer{}, nil }
	var queued []*execCall
	for i := range execChargeSlots + 2 {
		call := ec.start(context.Background(), fmt.Sprintf("ns/job-%d", i), false, block, func() {})
		if i >= execChargeSlots {
			queued = append(queued, call)
		}
	}
	urgent := ec.start(context.Background(), "ns/urgent", true, block, func() {})
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
