package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
)

// storeTimeout bounds each outbox read or write of the delivery loop.
const storeTimeout = 10 * time.Second

// Run delivers due notifications until ctx ends, then waits for the
// deliveries in flight. An attempt cut short by the end of ctx is not
// recorded: its lease runs out and it is made again, here after a
// restart or by another replica.
func (n *Notifier) Run(ctx context.Context) {
	sem := make(chan struct{}, n.cfg.Workers)
	defer n.wg.Wait()
	poll := n.clock.NewTicker(n.cfg.PollInterval)
	defer poll.Stop()
	for {
		n.claimDue(ctx, sem)
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		case <-poll.C():
		}
	}
}

// lease is how long a claimed notification is this process's: longer
// than reading the org and the POST may take together, so that no other
// replica sends it while this one still may.
func (n *Notifier) lease() time.Duration { return storeTimeout + n.cfg.Timeout + 5*time.Second }

// claimDue starts a delivery for every due notification, at most Workers
// at a time.
func (n *Notifier) claimDue(ctx context.Context, sem chan struct{}) {
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		claim, err := n.store.ClaimNotification(sctx, n.now(), n.lease())
		cancel()
		if err != nil || claim == nil {
			<-sem
			if err != nil && ctx.Err() == nil {
				n.log.Warn("reading webhook outbox", "err", err)
			}
			return
		}
		n.wg.Go(func() {
			defer func() { <-sem }()
			n.deliver(ctx, claim)
		})
	}
}

// deliver makes one attempt of the claimed notification to its org's
// current URL for the event (upstream reads the URL at send time too),
// schedules the next one if it failed, and records it. A retry asked for
// through the API is served first, as one attempt of its own.
func (n *Notifier) deliver(ctx context.Context, claim *store.NotificationClaim) {
	note := &claim.Notification
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	org, err := n.store.GetOrg(sctx, note.OID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		n.log.Warn("webhook delivery: reading org", "notification", note.ID, "err", err)
		return // the lease runs out and the attempt is made again
	}
	url := ""
	if org != nil {
		url = org.WebhookURLs[note.Event]
	}
	if url == "" {
		if err := n.store.CancelNotificationDelivery(sctx, note.ID, claim.Lease); err != nil {
			n.log.Warn("webhook delivery: cancelling", "notification", note.ID, "err", err)
		}
		return
	}

	start := time.Now()
	err = n.post(ctx, url, note.Body)
	if ctx.Err() != nil {
		return // shutting down: not an attempt of the receiver's
	}
	took := time.Since(start)
	if n.observer != nil {
		n.observer.ObserveDelivery(note.Event, err == nil, took)
	}
	a := store.DeliveryAttempt{At: n.now(), Success: err == nil, Manual: note.RetriesRequested > 0}
	auto := note.AutoAttempts
	if !a.Manual {
		auto++
	}
	if err != nil {
		n.log.Warn("webhook delivery failed", "notification", note.ID, "event", note.Event, "org", note.OID,
			"attempt", note.Attempts+1, "manual", a.Manual, "err", err)
		// A notification delivered once is not retried on its own again.
		if !note.Success && auto < n.cfg.MaxAttempts {
			delay := n.backoff(auto)
			next := a.At.Add(delay)
			a.Next = &next
			// The poll finds the retry too, but up to PollInterval late.
			// Armed before the attempt is recorded, so that whoever sees
			// the record and moves the clock finds it armed.
			n.clock.AfterFunc(delay, n.Kick)
		}
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer rcancel()
	if err := n.store.RecordNotificationAttempt(rctx, note.ID, claim.Lease, a); err != nil {
		n.log.Warn("webhook delivery: recording attempt", "notification", note.ID, "err", err)
	}
}

// backoff is the wait after a failed attempt, when the deliverer has
// made auto attempts of its own: RetryDelay after the first, doubling
// after each further one, capped at MaxRetryDelay. A failed manual retry
// also leaves the next automatic one this far away, at least RetryDelay
// (auto is 0 when it came before the first delivery).
func (n *Notifier) backoff(auto int) time.Duration {
	d := n.cfg.RetryDelay
	for i := 1; i < auto && d < n.cfg.MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, n.cfg.MaxRetryDelay)
}

// post sends body as JSON; a final status of 400 or more is a failure.
func (n *Notifier) post(ctx context.Context, url string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if errors.Is(err, netpolicy.ErrInternalAddress) {
		return fmt.Errorf("not sent: the receiver is at an internal address outside outbound.allowed_cidrs: %w", err)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 400 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}
