package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/trawlerhq/trawler/store"
)

// fireTimeout bounds the store and Kubernetes calls of one scheduled start.
const fireTimeout = 30 * time.Second

// Scheduler starts the crawls of workflows that have a cron schedule
// (UTC). Only the elected leader runs it: main calls Start when this
// replica gains the lease and Stop when it loses it. Each tick starts
// exactly one crawl; ticks missed while no scheduler ran are not caught
// up. It re-reads the schedules when a workflow changes in this process
// (Reload) and every rescan interval (changes made through other
// replicas). At each rescan it also relaunches crawls whose launch was
// lost to a crash (see relaunchOrphans).
type Scheduler struct {
	srv    *Server
	rescan time.Duration
	reload chan struct{}
	// parse turns a stored schedule into cron times (parseSchedule;
	// tests substitute a faster clockwork).
	parse func(spec string) (cron.Schedule, error)

	mu      sync.Mutex
	cron    *cron.Cron
	entries map[uuid.UUID]scheduleEntry
	stop    context.CancelFunc
	done    chan struct{}
}

type scheduleEntry struct {
	spec string
	id   cron.EntryID
}

func newScheduler(srv *Server, rescan time.Duration) *Scheduler {
	return &Scheduler{srv: srv, rescan: rescan, reload: make(chan struct{}, 1), parse: parseSchedule}
}

// Scheduler is the server's cron scheduler, for main to start and stop
// with leadership.
func (s *Server) Scheduler() *Scheduler { return s.scheduler }

// Start loads the schedules and runs them until ctx ends or Stop. It
// fails if the schedules cannot be read; starting twice is a no-op.
func (sc *Scheduler) Start(ctx context.Context) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.cron != nil {
		return nil
	}
	sc.cron = cron.New(cron.WithLocation(time.UTC))
	sc.entries = map[uuid.UUID]scheduleEntry{}
	if err := sc.syncLocked(ctx); err != nil {
		sc.cron = nil
		return err
	}
	ctx, sc.stop = context.WithCancel(ctx)
	sc.scheduleSeedFileCleanup(ctx)
	sc.done = make(chan struct{})
	sc.cron.Start()
	go sc.loop(ctx, sc.cron, sc.done)
	return nil
}

// scheduleSeedFileCleanup adds the seed-file cleanup to the cron, when
// it has a schedule.
func (sc *Scheduler) scheduleSeedFileCleanup(ctx context.Context) {
	when := sc.srv.cfg.SeedFileCleanupSchedule
	if when == nil {
		return
	}
	sc.cron.Schedule(when, cron.FuncJob(func() {
		job, err := sc.srv.cleanupSeedFiles(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			sc.srv.log.Error("seed-file cleanup failed", "job", jobID(job), "err", err)
		case err == nil:
			sc.srv.log.Info("seed-file cleanup done", "job", jobID(job))
		}
	}))
}

// jobID is job's id, or "" when there is none.
func jobID(job *store.BackgroundJob) string {
	if job == nil {
		return ""
	}
	return job.ID
}

// Stop stops scheduling and waits for starts in progress to finish.
func (sc *Scheduler) Stop() {
	sc.mu.Lock()
	c, stop, done := sc.cron, sc.stop, sc.done
	sc.cron = nil
	sc.mu.Unlock()
	if c == nil {
		return
	}
	stop()
	<-done
	<-c.Stop().Done()
}

// Reload asks a running scheduler to re-read the schedules soon; it
// never blocks.
func (sc *Scheduler) Reload() {
	select {
	case sc.reload <- struct{}{}:
	default:
	}
}

func (sc *Scheduler) loop(ctx context.Context, c *cron.Cron, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(sc.rescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sc.reload:
		case <-t.C:
			if err := sc.srv.relaunchOrphans(ctx); err != nil && ctx.Err() == nil {
				sc.srv.log.Warn("relaunching orphaned crawls", "err", err)
			}
		}
		sc.mu.Lock()
		var err error
		if sc.cron == c {
			err = sc.syncLocked(ctx)
		}
		sc.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			sc.srv.log.Warn("reloading crawl schedules", "err", err)
		}
	}
}

// syncLocked makes the cron entries match the stored schedules.
func (sc *Scheduler) syncLocked(ctx context.Context) error {
	wfs, err := sc.srv.store.ListScheduledCrawlConfigs(ctx)
	if err != nil {
		return fmt.Errorf("listing scheduled workflows: %w", err)
	}
	want := make(map[uuid.UUID]store.CrawlConfig, len(wfs))
	for _, wf := range wfs {
		want[wf.ID] = wf
	}
	for cid, e := range sc.entries {
		if wf, ok := want[cid]; !ok || wf.Schedule != e.spec {
			sc.cron.Remove(e.id)
			delete(sc.entries, cid)
		}
	}
	for cid, wf := range want {
		if _, ok := sc.entries[cid]; ok {
			continue
		}
		oid := wf.OID
		schedule, err := sc.parse(wf.Schedule)
		if err != nil {
			sc.srv.log.Warn("skipping invalid schedule", "workflow", cid, "schedule", wf.Schedule, "err", err)
			continue
		}
		id := sc.cron.Schedule(schedule, cron.FuncJob(func() { sc.fire(oid, cid) }))
		sc.entries[cid] = scheduleEntry{spec: wf.Schedule, id: id}
	}
	return nil
}

// fire starts one scheduled crawl of workflow cid, unless the workflow is
// gone or unscheduled, the org is over its storage or execution-time
// quota (the crawl is then recorded as skipped, a failed state), or the
// workflow's previous crawl has not ended (then no record is written: a
// slow crawl or one waiting for the org's limit never piles up repeats
// of itself).
// An org at its concurrency limit still gets the crawl: the operator
// keeps it waiting.
func (sc *Scheduler) fire(oid, cid uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.Background(), fireTimeout)
	defer cancel()
	s := sc.srv
	log := s.log.With("workflow", cid)
	wf, err := s.store.GetCrawlConfig(ctx, oid, cid)
	if errors.Is(err, store.ErrNotFound) || err == nil && (wf.Inactive || wf.Schedule == "") {
		sc.Reload()
		return
	}
	if err != nil {
		log.Error("scheduled crawl: reading workflow", "err", err)
		return
	}
	org, err := s.store.GetOrg(ctx, oid)
	if err != nil {
		log.Error("scheduled crawl: reading org", "err", err)
		return
	}
	id, err := s.startIdleCrawl(ctx, org, wf, wf.ModifiedBy, false)
	switch {
	case errors.Is(err, errCrawlAlreadyRunning):
		log.Info("scheduled crawl skipped: the workflow's previous crawl is still active")
	case errors.Is(err, errOrgReadOnly):
		log.Info("scheduled crawl skipped: the org is read-only")
	case errors.Is(err, errStorageQuotaReached), errors.Is(err, errExecQuotaReached):
		state := store.StateSkippedStorageQuota
		if errors.Is(err, errExecQuotaReached) {
			state = store.StateSkippedTimeQuota
		}
		if id, err := s.recordSkippedCrawl(ctx, org, wf, state); err != nil {
			log.Error("scheduled crawl skipped: recording it", "state", state, "err", err)
		} else {
			log.Info("scheduled crawl skipped", "crawl", id, "state", state)
		}
	case errors.Is(err, errProxyNotFound):
		log.Warn("scheduled crawl skipped: the workflow's proxy is not configured", "proxyId", deref1(wf.ProxyID))
	case errors.Is(err, errCrawlerNotFound):
		log.Warn("scheduled crawl skipped: the workflow's crawler channel is not configured", "crawlerChannel", wf.CrawlerChannel)
	case err != nil:
		log.Error("scheduled crawl: starting", "err", err)
	default:
		log.Info("scheduled crawl started", "crawl", id)
	}
}
