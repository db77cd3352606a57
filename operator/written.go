package operator

import (
	"sync"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// writtenJobs remembers, per job, the newest CrawlJob this operator wrote
// and every resource version its writes replaced since the informer last
// caught up, so that no pass acts on a status older than one we wrote: a
// restart recorded by one write and followed by another must not look
// pending again (the pass would delete the new pods).
//
// Resource versions are opaque, so they are not compared by order. Each
// write is conditional on the version it replaced, so our writes form a
// chain of consecutive versions starting at the one the cache showed; the
// cache only moves forward, so any version it shows outside the chain is
// our newest write or a later one (someone else's) and can be trusted.
type writtenJobs struct {
	mu   sync.Mutex
	jobs map[string]writtenJob
}

type writtenJob struct {
	job      *trawlerv1.CrawlJob
	replaced map[string]bool // resource versions our writes replaced
}

func newWrittenJobs() *writtenJobs { return &writtenJobs{jobs: map[string]writtenJob{}} }

// wrote records that a write replaced version basedOn with updated.
func (w *writtenJobs) wrote(key, basedOn string, updated *trawlerv1.CrawlJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.jobs[key]
	if !ok {
		e.replaced = map[string]bool{}
	}
	e.replaced[basedOn] = true
	e.job = updated
	w.jobs[key] = e
}

// newest returns the job a pass should act on: our newest write while the
// cache still shows a version it replaced, else the cache's (and the
// memo is dropped). The caller must not modify the result.
func (w *writtenJobs) newest(key string, cached *trawlerv1.CrawlJob) *trawlerv1.CrawlJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.jobs[key]
	if !ok {
		return cached
	}
	if e.replaced[cached.ResourceVersion] {
		return e.job
	}
	delete(w.jobs, key)
	return cached
}

// forget drops what is remembered of a job.
func (w *writtenJobs) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}
