package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
)

// orgCharges coalesces the execution-time charges to one org. An org's
// charges are serialised (its counters are read, split and written), so
// with thousands of its crawls running, one read and one write per
// crawl is a line no database keeps up with. Charges that arrive while
// the org's write is in flight form the next batch, written as one
// charge of their sum: splitting a sum between the monthly quota, the
// gifted and the extra seconds gives the same parts as splitting its
// terms one after the other. No charge waits for more than the write
// before its own.
//
// A batch whose write failed is owed: its seconds go with the org's next
// charge of that month. Its crawls' counts are already written (their
// clocks moved), so counting them again would charge nothing: without
// the debt the org would never be charged those seconds. The debt lives
// in the leader's memory only; a leader change loses it (trawler
// undercharges rather than double charges).
type orgCharges struct {
	openBatches[orgMonth, orgBatch]

	owedMu sync.Mutex
	owed   map[orgMonth]int64
}

// orgMonth keys a batch: one org's charges counted in one month.
type orgMonth struct {
	oid   uuid.UUID
	month string
}

// orgBatch is the charges waiting for one org write; done closes when
// the write answered org or err, for each of them.
type orgBatch struct {
	seconds int64
	now     time.Time
	done    chan struct{}
	org     *Org
	err     error
}

// join adds d seconds counted at now to the open batch of org oid and
// returns it.
func (oc *orgCharges) join(oid uuid.UUID, now time.Time, d int64) (orgMonth, *orgBatch) {
	key := orgMonth{oid: oid, month: YearMonth(now)}
	b := oc.joinOpen(key, func() *orgBatch { return &orgBatch{done: make(chan struct{})} }, func(b *orgBatch) {
		b.seconds += d
		b.now = now
	})
	return key, b
}

// owe keeps the seconds of a failed write for key's next charge.
func (oc *orgCharges) owe(key orgMonth, seconds int64) {
	oc.owedMu.Lock()
	defer oc.owedMu.Unlock()
	if oc.owed == nil {
		oc.owed = map[orgMonth]int64{}
	}
	oc.owed[key] += seconds
}

// takeOwed returns and clears key's debt.
func (oc *orgCharges) takeOwed(key orgMonth) int64 {
	oc.owedMu.Lock()
	defer oc.owedMu.Unlock()
	d := oc.owed[key]
	delete(oc.owed, key)
	return d
}

// chargeOrgExec charges d seconds counted at now to org oid and returns
// the org afterwards, with the charges that arrived while the org's
// previous write was in flight and the seconds of failed writes
// (orgCharges). The operator's leader is the only writer of the
// counters; its writes to one org are serialised by the org's lock,
// which quota updates take too.
func (m *Mongo) chargeOrgExec(ctx context.Context, oid uuid.UUID, now time.Time, d int64) (*Org, error) {
	key, b := m.orgCharges.join(oid, now, d)
	unlock := m.lockOrg(oid)
	if m.orgCharges.seal(key, b) {
		seconds := b.seconds + m.orgCharges.takeOwed(key)
		b.org, b.err = m.writeOrgExecCharge(ctx, oid, b.now, seconds)
		if b.err != nil && !errors.Is(b.err, ErrNotFound) {
			m.orgCharges.owe(key, seconds)
		}
		close(b.done)
	}
	unlock()
	// Whoever sealed the batch wrote it while holding the lock this call
	// held after it.
	<-b.done
	return b.org, b.err
}
