package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/store"
)

// TestExecCharges: a charge's answer holds while the status shows the
// clock it counted from, its pause reason is given once, and a failed
// charge is given once and then forgotten, so the next tick charges again.
func TestExecCharges(t *testing.T) {
	since := t0
	clock := metav1.NewTime(since)
	later := metav1.NewTime(since.Add(time.Minute))
	run := func(ec *execCharges, a *execAnswer, err error) {
		back := make(chan struct{})
		call := ec.start(context.Background(), "ns/job", &since, false,
			func(context.Context) (*execAnswer, error) { return a, err }, func() { close(back) })
		<-call.done
		<-back
	}

	ec := newExecCharges()
	run(ec, &execAnswer{LastUpdate: later.Time, CrawlExecSeconds: 60, PauseReason: store.StatePausedTimeQuota}, nil)
	for i, wantReason := range []string{store.StatePausedTimeQuota, ""} {
		call, done := ec.take("ns/job", &clock)
		if call == nil || !done {
			t.Fatalf("take %d: call %v, done %v; want the done call", i, call, done)
		}
		if got := ec.answerOnce(call); got.CrawlExecSeconds != 60 || got.PauseReason != wantReason {
			t.Fatalf("take %d: answer %+v, want 60 s and pause reason %q", i, *got, wantReason)
		}
	}
	if call, done := ec.take("ns/job", &later); call != nil || !done {
		t.Fatalf("status past the call's clock: call %v, done %v; want none", call, done)
	}
	if call, _ := ec.take("ns/job", &clock); call != nil {
		t.Fatal("the call outlived a status past its clock")
	}

	run(ec, nil, errors.New("store down"))
	if call, _ := ec.take("ns/job", &clock); call == nil || call.err == nil {
		t.Fatalf("failed call: %v, want it with its error", call)
	}
	if call, _ := ec.take("ns/job", &clock); call != nil {
		t.Fatal("a failed call was given twice")
	}
}

// TestExecChargesInFlight: a call not done yet is returned as in flight.
func TestExecChargesInFlight(t *testing.T) {
	since := t0
	clock := metav1.NewTime(since)
	ec := newExecCharges()
	release := make(chan struct{})
	call := ec.start(context.Background(), "ns/job", &since, false, func(context.Context) (*execAnswer, error) {
		<-release
		return &execAnswer{}, nil
	}, func() {})
	if got, done := ec.take("ns/job", &clock); got != call || done {
		t.Fatalf("in flight: call %v, done %v", got, done)
	}
	close(release)
	<-call.done
}

// TestExecChargesSlots: however many calls are started, at most
// execChargeSlots run at once, and every one runs.
func TestExecChargesSlots(t *testing.T) {
	since := t0
	ec := newExecCharges()
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	calls := make([]*execCall, 3*execChargeSlots)
	for i := range calls {
		calls[i] = ec.start(context.Background(), fmt.Sprintf("ns/job-%d", i), &since, false, func(context.Context) (*execAnswer, error) {
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
	since := t0
	ec := newExecCharges()
	release := make(chan struct{})
	block := func(context.Context) (*execAnswer, error) { <-release; return &execAnswer{}, nil }
	var queued []*execCall
	for i := range execChargeSlots + 2 {
		call := ec.start(context.Background(), fmt.Sprintf("ns/job-%d", i), &since, false, block, func() {})
		if i >= execChargeSlots {
			queued = append(queued, call)
		}
	}
	urgent := ec.start(context.Background(), "ns/urgent", &since, true, block, func() {})
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
