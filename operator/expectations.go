package operator

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTTL is how long a create or delete the caches have not shown
// yet holds back a repeat. Past it the operator acts again, as the Job
// controller does, in case the object went away before the cache saw it.
const expectationTTL = time.Minute

// expectations remember, per job, the children this operator created or
// deleted that its informer caches do not show yet. A pass that runs on
// such a cache then neither creates a child again (a POST answered
// AlreadyExists) nor deletes one twice: children have deterministic names,
// so a name is what is expected, as "pod/<name>" or "pvc/<name>".
type expectations struct {
	mu sync.Mutex
	m  map[string]map[string]expectation // job key -> "pod/<name>" -> expectation
}

type expectation struct {
	at time.Time
	// deleted is the UID of the deleted object; empty for a create.
	deleted types.UID
}

func newExpectations() *expectations {
	return &expectations{m: map[string]map[string]expectation{}}
}

// created records that key's child name was created at now.
func (e *expectations) created(key, name string, now time.Time) {
	e.set(key, name, expectation{at: now})
}

// deleted records that key's child name, of the given UID, was deleted
// at now.
func (e *expectations) deleted(key, name string, uid types.UID, now time.Time) {
	e.set(key, name, expectation{at: now, deleted: uid})
}

func (e *expectations) set(key, name string, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[key] == nil {
		e.m[key] = map[string]expectation{}
	}
	e.m[key][name] = x
}

// awaitsCreate tells whether key's child name, absent from the cache,
// was created by us lately: the cache has not caught up.
func (e *expectations) awaitsCreate(key, name string, now time.Time) bool {
	x, ok := e.get(key, name, now)
	return ok && x.deleted == ""
}

// awaitsDelete tells whether the object uid of key's child name, still in
// the cache, was deleted by us lately.
func (e *expectations) awaitsDelete(key, name string, uid types.UID, now time.Time) bool {
	x, ok := e.get(key, name, now)
	return ok && x.deleted == uid
}

// get returns a live expectation, dropping an expired one.
func (e *expectations) get(key, name string, now time.Time) (expectation, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key][name]
	if ok && now.Sub(x.at) > expectationTTL {
		delete(e.m[key], name)
		return x, false
	}
	return x, ok
}

// any tells whether key has expectations: most passes, of crawls whose
// children the caches show, have none and skip observed.
func (e *expectations) any(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.m[key]) > 0
}

// observed drops the expectations the cache has met: a created child it
// shows, a deleted one it no longer shows under the deleted UID. seen
// holds the UIDs of the children in the cache, by "pod/<name>" or
// "pvc/<name>".
func (e *expectations) observed(key string, seen map[string]types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, x := range e.m[key] {
		uid := seen[name]
		if (x.deleted == "" && uid != "") || (x.deleted != "" && uid != x.deleted) {
			delete(e.m[key], name)
		}
	}
	if len(e.m[key]) == 0 {
		delete(e.m, key)
	}
}

// forget drops a job's expectations.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
