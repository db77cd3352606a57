package store

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestOrgBytesOwedUntilARecountAfterTheLastDoubt: an org whose
// bytesStored is in doubt is due a heal however lately it was recomputed,
// until a recomputation that started after the latest doubt answers; after
// a failed one the heal keeps its spacing.
func TestOrgBytesOwedUntilARecountAfterTheLastDoubt(t *testing.T) {
	var r orgBytesRecomputes
	oid := uuid.New()
	t0 := time.Now()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

	r.ran(oid, t0, time.Second, nil)
	if r.due(oid, t0) {
		t.Fatal("due right after a recomputation, nothing owed")
	}
	r.owe(oid, at(1))
	r.owe(oid, at(3))
	r.ran(oid, at(4), 2*time.Second, nil) // started at 2: between the doubts
	if !r.due(oid, at(4)) {
		t.Fatal("a recomputation started before the latest doubt cleared it")
	}
	r.ran(oid, at(5), 500*time.Millisecond, errors.New("timed out")) // started after it, failed
	if r.due(oid, at(6)) {
		t.Fatal("due again right after a failed recomputation")
	}
	if !r.due(oid, at(11)) {
		t.Fatal("not due ten failed recomputations' time later")
	}
	r.ran(oid, at(12), time.Second, nil) // started at 11
	if r.due(oid, at(12)) {
		t.Fatal("still owed after a recomputation that started after the doubt answered")
	}
}
