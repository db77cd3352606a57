package store

import "sync"

// openBatches are the batches callers can still join, one per key: the
// shape of the store's coalesced writes (orgCharges, orgBytesRecomputes).
// A caller joins its key's open batch, then takes the key's lock; the
// first caller to seal the batch runs it for all who joined, and callers
// arriving after the seal open the next one.
type openBatches[K comparable, B any] struct {
	mu   sync.Mutex
	open map[K]*B
}

// joinOpen returns key's open batch (newBatch's, if none is open) after
// add counted the caller in, under the lock.
func (o *openBatches[K, B]) joinOpen(key K, newBatch func() *B, add func(*B)) *B {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open == nil {
		o.open = map[K]*B{}
	}
	b := o.open[key]
	if b == nil {
		b = newBatch()
		o.open[key] = b
	}
	add(b)
	return b
}

// seal takes batch b of key for running: true for the first caller, and
// no more callers join it.
func (o *openBatches[K, B]) seal(key K, b *B) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open[key] != b {
		return false
	}
	delete(o.open, key)
	return true
}
