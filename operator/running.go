package operator

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// running follows a crawl with an active crawler and a reachable Redis:
// its progress, whether it must stop, and the state that follows from
// its instances' statuses.
func (p *plan) running(cj *trawlerv1.CrawlJob, o observed) {
	r := o.Redis
	p.Progress = &progress{PagesFound: r.PagesFound, PagesDone: r.PagesDone, Size: r.Size,
		FilesAdded: r.FilesAdded, FilesAddedSize: r.FilesAddedSize}

	stopping, reason := p.Stopping || cj.Spec.Stopping, reasonStoppedByUser
	if cj.Spec.MaxCrawlSize > 0 && r.Size > cj.Spec.MaxCrawlSize && !stopping {
		stopping, reason = true, reasonSizeLimit
	}
	if cj.Spec.CrawlTimeout > 0 && p.RunningSince != nil {
		deadline := p.RunningSince.Add(time.Duration(cj.Spec.CrawlTimeout) * time.Second)
		if !o.Now.Before(deadline) {
			if !stopping {
				reason = reasonTimeLimit
			}
			stopping = true
		} else {
			p.lookAgainIn(deadline.Sub(o.Now))
		}
	}
	// Sticky: a size that drops after a session upload must not resume a
	// crawl that was told to stop.
	p.Stopping = stopping
	p.Control.Stopping = stopping
	// A stop overrides a pause; a pause asked for makes the crawlers
	// pause, and a resume clears it.
	pausing := !pauseTime(cj).IsZero() && !stopping
	switch {
	case stopping && (p.StopReason == "" || isPauseReason(p.StopReason)):
		p.StopReason = reason
	case pausing:
		p.StopReason = pauseReason(cj)
	case isPauseReason(p.StopReason):
		p.StopReason = ""
	}
	if isPaused(cj, p.Reaches) {
		// Paused: the crawlers have exited and their pods go; only a
		// resume or a stop moves the crawl on.
		return
	}

	stats := redisStats(r)
	var done, failed, succeededDone int
	anyRunning := false
	phases := map[string]bool{}
	for i := range int(p.Scale) {
		name := k8s.CrawlerName(cj.Spec.ID, i)
		switch s := r.Statuses[name]; s {
		case "done":
			done++
			if pod := o.Crawlers[i]; pod == nil || pod.Status.Phase == corev1.PodSucceeded {
				succeededDone++
			}
		case statusInterrupted:
			// A crawler that paused: it uploaded what it had and exits.
			// The pause needs no more (upstream's rule): its pod goes
			// with the paused state. When the crawl is stopped instead,
			// what it uploaded is its final part, once it has exited.
			if exited := o.Crawlers[i] == nil || o.Crawlers[i].Status.Phase == corev1.PodSucceeded; exited && stopping {
				done++
				succeededDone++
			}
		case "failed":
			failed++
		case "running":
			anyRunning = true
		default:
			phases[s] = true
		}
	}

	if p.Scale > 0 && done+failed >= int(p.Scale) {
		settled := r.PendingFiles == 0 && succeededDone == done
		if settled && done > 0 && !store.IsRunning(p.Reaches) {
			// A crawl that ran and ended between two passes was running:
			// upstream records that before its end, and crawlStarted
			// follows it.
			p.enterRunning()
		}
		switch {
		case !settled:
			// Wait for every WACZ to be recorded and every done crawler to
			// exit; the poller and pod events bring us back.
		case done > 0 && r.PagesFound == 1 && r.FilesAdded == 0:
			p.move(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: stats})
		case done > 0:
			state := store.StatePartialComplete
			if r.PagesDone > 0 && r.PagesDone >= r.PagesFound {
				state = store.StateComplete
			}
			p.move(transition{To: state, From: store.ActiveStates, Finished: true, Stats: stats})
		case stopping && r.PagesDone == 0:
			p.move(transition{To: store.StateCanceled, From: store.ActiveStates, Finished: true, Stats: stats})
		default:
			p.move(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: stats})
		}
		return
	}

	if pausing && crawlersPaused(cj, r, p.Scale) {
		// Every crawler uploaded what it had: paused, once the uploads
		// are recorded.
		if r.PendingFiles == 0 {
			p.move(transition{To: pausedState(p.StopReason), From: store.ActiveStates, Stats: stats})
		}
		return
	}

	next := store.StateRunning
	if !anyRunning && store.IsRunning(p.Reaches) {
		for _, ph := range []string{store.StateGenerateWACZ, store.StateUploadingWACZ, store.StatePendingWait} {
			if phases[ph] {
				next = ph
				break
			}
		}
	}
	if next == store.StateRunning {
		p.enterRunning()
	} else if next != p.Reaches {
		p.move(transition{To: next, From: store.RunningStates})
	}
}

// enterRunning moves a crawl that is not running yet (starting, waiting
// for capacity, paused) to running.
func (p *plan) enterRunning() {
	if p.Reaches != store.StateRunning {
		p.move(transition{To: store.StateRunning,
			From: slices.Concat(store.RunningStates, []string{store.StateStarting, store.StateWaitingCapacity}, store.PausedStates)})
	}
}

// redisStats are the crawl's stats as its Redis last told, nil when it
// was not reachable.
func redisStats(r *redisState) *store.CrawlStats {
	if r == nil || !r.Reachable {
		return nil
	}
	return &store.CrawlStats{Found: r.PagesFound, Done: r.PagesDone, Size: r.Size}
}
