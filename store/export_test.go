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

// HoldOrgBytesLock takes org oid's bytesStored recomputation lock, as a
// recomputation in flight does, and returns its release.
func (m *Mongo) HoldOrgBytesLock(oid uuid.UUID) func() { return m.orgBytes.lock(oid) }

// OrgBytesCallers is how many calls wait in org oid's open bytesStored
// recomputation.
func (m *Mongo) OrgBytesCallers(oid uuid.UUID) int {
	m.orgBytes.mu.Lock()
	defer m.orgBytes.mu.Unlock()
	if b := m.orgBytes.open[oid]; b != nil {
		return b.callers
	}
	return 0
}

// DateOrgBytesRecount sets when org oid's last bytesStored recomputation
// here ended and how long it took, as healOrgBytesStored reads them.
func (m *Mongo) DateOrgBytesRecount(oid uuid.UUID, ended time.Time, took time.Duration) {
	m.orgBytes.ran(oid, ended, took, nil)
}
