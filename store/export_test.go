package store

import (
	"time"

	"github.com/google/uuid"
)

// HoldOrgLock takes org oid's lock, as an org write in flight does, and
// returns its release.
func (m *Mongo) HoldOrgLock(oid uuid.UUID) func() { return m.lockOrg(oid) }

// OpenOrgCharge is the seconds waiting in org oid's open batch for the
// month of now.
func (m *Mongo) OpenOrgCharge(oid uuid.UUID, now time.Time) int64 {
	m.orgCharges.mu.Lock()
	defer m.orgCharges.mu.Unlock()
	if b := m.orgCharges.open[orgMonth{oid: oid, month: YearMonth(now)}]; b != nil {
		return b.seconds
	}
	return 0
}
