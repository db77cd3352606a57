package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// storeTimeout bounds each outbox read or write of the delivery loop.
const storeTimeout = 10 * time.Second

// Run delivers due notifications until ctx ends, then waits for the
// deliveries in flight. An attempt cut short by the end of ctx is not
// recorded: its lease runs out and it is delivered again, here after a
// restart or by another replica.
func (n *Notifier) Run(ctx context.Context) {
	sem := make(chan struct{}, n.cfg.Workers)
	defer n.wg.Wait()
	poll := time.NewTicker(n.cfg.PollInterval)
	defer poll.Stop()
	for {
		n.claimDue(ctx, sem)
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		case <-poll.C:
		}
	}
}

// lease is how long a claimed delivery is this process's: longer than
// the attempt may take.
func (n *Notifier) lease() time.Duration { return n.cfg.Timeout + 5*time.Second }

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
		note, err := n.store.ClaimNotification(sctx, n.now(), n.lease())
		cancel()
		if err != nil || note == nil {
			<-sem
			if err != nil && ctx.Err() == nil {
				n.log.Warn("reading webhook outbox", "err", err)
			}
			return
		}
		n.wg.Go(func() {
			defer func() { <-sem }()
			n.deliver(ctx, note)
		})
	}
}

// deliver makes one attempt of note to its org's current URL for the
// event (upstream reads the URL at send time too) and records it.
func (n *Notifier) deliver(ctx context.Context, note *store.Notification) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	org, err := n.store.GetOrg(sctx, note.OID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		n.log.Warn("webhook delivery: reading org", "notification", note.ID, "err", err)
		return // the lease runs out and the delivery is tried again
	}
	url := ""
	if org != nil {
		url = org.WebhookURLs[note.Event]
	}
	if url == "" {
		if err := n.store.EndNotificationSend(sctx, note.ID); err != nil {
			n.log.Warn("webhook delivery: ending send", "notification", note.ID, "err", err)
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
	a := store.DeliveryAttempt{At: n.now(), Success: err == nil}
	if err != nil {
		n.log.Warn("webhook delivery failed", "notification", note.ID, "event", note.Event, "org", note.OID,
			"attempt", note.SendAttempts+1, "err", err)
		if note.SendAttempts+1 < n.cfg.MaxAttempts {
			delay := n.backoff(note.SendAttempts)
			next := a.At.Add(delay)
			a.Next = &next
			time.AfterFunc(delay, n.Kick)
		}
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer rcancel()
	if err := n.store.RecordNotificationAttempt(rctx, note.ID, a); err != nil {
		n.log.Warn("webhook delivery: recording attempt", "notification", note.ID, "err", err)
	}
}

// backoff is the wait after the failed attempt number i (0-based) of a
// send: RetryDelay doubling, capped at MaxRetryDelay.
func (n *Notifier) backoff(i int) time.Duration {
	d := n.cfg.RetryDelay
	for ; i > 0 && d < n.cfg.MaxRetryDelay; i-- {
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
