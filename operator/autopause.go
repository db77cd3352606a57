package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// countExec carries out the plan's accounting tick: the store counts the
// crawl's crawler-pod seconds and charges its org, and the org afterwards
// says whether a quota calls for an automatic pause. The charge runs in
// the background (execCharges): a pass takes its answer once it is there,
// and until then the clock stays, so the next tick waits. Only a tick
// that must be counted before what the pass leads to (a crawler exited,
// the crawl is being deleted or paused) waits for its answer, at the head
// of the queue and, as a transition does, at most transitionWait: past
// that the pass is pending (it neither writes its status nor wraps up),
// and the charge's end brings the job back. A worker held for the
// charge of every crawler exit of a hundred crawls pausing at once kept
// their paused states waiting in the queue. Nil without an answer.
func (c *Controller) countExec(ctx context.Context, key string, cj *trawlerv1.CrawlJob, p plan, o observed) (*execAnswer, bool, error) {
	call, done := c.exec.take(key)
	switch {
	case call != nil && done && call.err == nil:
		return call.answer, false, nil
	case call != nil && done:
		// An earlier pass's charge failed: it moved no clock, so this
		// pass's tick counts its seconds again from the crawler pods.
		// With none to count now (they went with a pause or a delete),
		// the failed tick goes again as it was, waited for: the store
		// takes it once (its clock), and a failure brings the key back
		// with backoff.
		c.log.Warn("counting crawl exec seconds failed, counting again", "crawl", cj.Spec.ID, "err", call.err)
		if failed := call.tick; p.Exec == nil && failed.Since != nil && failed.Seconds > 0 {
			failed.Wait = true
			p.Exec = &failed
		}
		call = nil
	}
	if p.Exec == nil {
		return nil, false, nil
	}
	if call == nil {
		call = &execCall{key: key, crawlID: cj.Spec.ID, tick: *p.Exec, pods: o.Crawlers, now: o.Now.Truncate(time.Second)}
		if !p.Exec.Until.IsZero() {
			call.now = p.Exec.Until
		}
		oid, err := uuid.Parse(cj.Spec.OID)
		if call.oid = oid; err != nil {
			// No org to look at: the store's charge finds the crawl's.
			call.tick.Look = false
		}
		if o.Redis != nil && o.Redis.Reachable {
			call.pending = o.Redis.Size
		}
		c.exec.start(ctx, call, p.Exec.Wait, func(err error) {
			if err != nil {
				// A pass gave up waiting: the next one, with backoff.
				c.queue.AddRateLimited(key)
				return
			}
			c.enqueue(key, "exec-charged")
		})
	}
	if !p.Exec.Wait {
		return nil, false, nil
	}
	c.exec.hurry(call)
	if !c.exec.await(ctx, call, transitionWait) {
		return nil, true, nil
	}
	if call.err != nil {
		// Left for the next pass, which counts again (above).
		return nil, false, call.err
	}
	if call, _ = c.exec.take(key); call == nil {
		return nil, false, nil
	}
	return call.answer, false, nil
}

// chargeExecBatch is a batch of charges in the store and the pauses
// they call for. Ticks without a clock learn it first, and count at once
// from a clock an earlier leader left (a call's pods say what ran).
func (c *Controller) chargeExecBatch(ctx context.Context, calls []*execCall) {
	var learning []*execCall
	for _, call := range calls {
		if call.tick.Since == nil {
			learning = append(learning, call)
		}
	}
	for i, clock := range c.chargeCrawlsExec(ctx, learning) {
		call := learning[i]
		if clock.Err != nil {
			call.err = fmt.Errorf("reading crawl exec clock: %w", clock.Err)
			continue
		}
		call.tick.Since, call.now = &clock.LastUpdate, countUntil(clock.LastUpdate, call.now)
		if call.tick.Seconds, _ = podExecSeconds(call.pods, clock.LastUpdate, call.now); call.tick.Seconds == 0 {
			call.answer = &execAnswer{LastUpdate: clock.LastUpdate}
		}
	}
	c.lookAtOrgs(ctx, calls)
	counting := slices.DeleteFunc(slices.Clone(calls), func(call *execCall) bool { return call.err != nil || call.answer != nil })
	var orgErr error
	owed := 0
	for i, tick := range c.chargeCrawlsExec(ctx, counting) {
		call := counting[i]
		if tick.Err != nil {
			call.err = fmt.Errorf("counting crawl exec seconds: %w", tick.Err)
			continue
		}
		call.answer = &execAnswer{LastUpdate: tick.LastUpdate}
		if tick.OrgErr != nil {
			orgErr = tick.OrgErr
			owed++
		}
		if tick.Org != nil {
			call.answer.PauseReason = quotaPauseReason(tick.Org, call.pending, call.now)
			if quotaFree(tick.Org) {
				call.answer.QuotaFreeAt = call.now
			}
		}
	}
	if orgErr != nil {
		// The crawls are counted; their orgs get the seconds with their
		// next charge, and the quota checks wait for it.
		c.log.Warn("charging orgs exec seconds failed, owed to their next charge", "crawls", owed, "err", orgErr)
	}
}

// lookAtOrgs answers the batch's looks (execTick.Look) with one read of
// their orgs: a look whose org still has no quota moves no clock and
// writes nothing; one whose org has a quota now, or is gone, is counted
// with the batch.
func (c *Controller) lookAtOrgs(ctx context.Context, calls []*execCall) {
	var looks []*execCall
	var oids []uuid.UUID
	for _, call := range calls {
		if call.err == nil && call.answer == nil && call.tick.Look {
			looks = append(looks, call)
			oids = append(oids, call.oid)
		}
	}
	if len(looks) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	orgs, err := c.store.GetOrgs(sctx, oids)
	cancel()
	for _, call := range looks {
		switch org := orgs[call.oid]; {
		case err != nil:
			call.err = fmt.Errorf("reading org for its quotas: %w", err)
		case org != nil && quotaFree(org):
			call.answer = &execAnswer{LastUpdate: *call.tick.Since, QuotaFreeAt: call.now}
		default:
			call.tick.Look = false
		}
	}
}

// chargeCrawlsExec is the store's ChargeCrawlsExec of the calls' ticks,
// bounded by the store timeout; none for no calls.
func (c *Controller) chargeCrawlsExec(ctx context.Context, calls []*execCall) []store.ExecTick {
	if len(calls) == 0 {
		return nil
	}
	charges := make([]store.CrawlExecCharge, len(calls))
	for i, call := range calls {
		charges[i] = store.CrawlExecCharge{CrawlID: call.crawlID, Since: call.tick.Since, Now: call.now, Seconds: call.tick.Seconds}
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	defer cancel()
	return c.store.ChargeCrawlsExec(sctx, charges)
}

// requestAutoPause is the operator's automatic pause of a crawl over a
// quota (upstream-2026 §1.8), the one hook between the quotas and the
// pause sequence: it records the request as the pause route does (the
// crawl document's shouldPause and pausedAt, the CrawlJob's
// spec.pausedAt), and crawlStatus records the reason as the status's
// stopReason, which the pause sequence maps to the paused state
// (paused_time_quota_reached, paused_storage_quota_reached). The org's
// owners are told once per automatic pause.
func (c *Controller) requestAutoPause(ctx context.Context, key string, cj *trawlerv1.CrawlJob, reason string) error {
	now := c.clock.Now().UTC().Truncate(time.Second)
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	err := c.store.RequestCrawlPause(sctx, cj.Spec.ID, now)
	cancel()
	if err != nil {
		return fmt.Errorf("recording automatic pause: %w", err)
	}
	at := now.Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{annotationAutoPause: at + " " + reason}},
		"spec":     map[string]any{"pausedAt": at}})
	if err != nil {
		return err
	}
	if _, err := c.trawler.TrawlerV1().CrawlJobs(cj.Namespace).Patch(ctx, cj.Name, types.MergePatchType, patch,
		metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("requesting automatic pause: %w", err)
	}
	c.log.Info("crawl paused automatically", "crawl", cj.Spec.ID, "reason", reason)
	c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonAutoPaused, "pausing: %s", reason)
	c.background.start(autoPauseMailKey(key), func() { c.mailAutoPause(context.WithoutCancel(ctx), cj, reason, now) })
	return nil
}

// autoPauseMailKey is the background task key of an automatic pause's
// e-mail.
func autoPauseMailKey(key string) string { return "autopause-mail/" + key }

// autoPauseMailTimeout bounds the look-ups and deliveries of one
// automatic pause's e-mails.
const autoPauseMailTimeout = 2 * time.Minute

// mailAutoPause tells the org's owners of an automatic pause, unless
// they were told already since the crawl's last resume.
func (c *Controller) mailAutoPause(ctx context.Context, cj *trawlerv1.CrawlJob, reason string, at time.Time) {
	ctx, cancel := context.WithTimeout(ctx, autoPauseMailTimeout)
	defer cancel()
	log := c.log.With("crawl", cj.Spec.ID, "reason", reason)
	claimed, err := c.store.ClaimAutoPauseEmail(ctx, cj.Spec.ID)
	if err != nil || !claimed {
		if err != nil {
			log.Warn("automatic pause e-mail not sent", "err", err)
		}
		return
	}
	oid, err := uuid.Parse(cj.Spec.OID)
	if err != nil {
		log.Warn("automatic pause e-mail not sent: bad org id", "oid", cj.Spec.OID)
		return
	}
	owners, err := c.store.OrgOwnerEmails(ctx, oid)
	if err != nil {
		log.Warn("automatic pause e-mail not sent", "err", err)
		return
	}
	subject, body := autoPauseMail(cj, reason, at, at.Add(c.cfg.PausedCrawlLimit))
	for _, to := range owners {
		if c.mailer == nil {
			log.Info("not sending automatic pause e-mail (no mailer)", "to", to, "subject", subject)
			continue
		}
		if err := c.mailer.Send(ctx, to, subject, body); err != nil {
			log.Warn("sending automatic pause e-mail failed", "to", to, "err", err)
		}
	}
}

// autoPauseMail is the subject and body of an automatic pause's e-mail,
// which says when the pause expires.
func autoPauseMail(cj *trawlerv1.CrawlJob, reason string, at, expires time.Time) (subject, body string) {
	why := "the organization reached its execution-time quota"
	switch reason {
	case store.StatePausedStorageQuota:
		why = "the organization reached its storage quota"
	case store.StatePausedOrgReadOnly:
		why = "the organization was set to read-only"
	}
	subject = "Your crawl was paused: " + why
	var b strings.Builder
	fmt.Fprintf(&b, "The crawl %s was paused automatically at %s because %s.\n\n",
		cj.Spec.ID, at.Format(time.RFC3339), why)
	fmt.Fprintf(&b, "Reason: %s\nWorkflow: %s\nOrganization: %s\n\n", reason, cj.Spec.CID, cj.Spec.OID)
	fmt.Fprintf(&b, "Once the organization allows it, resume the crawl to go on from where it stopped. "+
		"If it is not resumed by %s, it is stopped, keeping what it crawled.\n", expires.UTC().Format(time.RFC3339))
	return subject, b.String()
}
