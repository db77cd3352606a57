package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/email"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// TestExecQuotaAutoPause runs a two-pod crawl on the real parts with a
// one-second accounting tick in an org 50 s short of its monthly minute
// (upstream-2026 §8.6 items 2 and 3): the crawl's crawlExecSeconds, its
// status and the org's counters grow together, and once the org is over
// its quota the operator asks for the crawl's automatic pause through its
// hook (the CrawlJob's spec.pausedAt, status.stopReason
// paused_time_quota_reached) and e-mails the org's owner once, read from
// Mailpit. The pause itself (the crawler's upload, the state
// paused_time_quota_reached) is the pause sequence's.
func TestExecQuotaAutoPause(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	month := time.Now().UTC().Format("2006-01")

	owner := &store.User{ID: uuid.New(), Email: "owner-" + h.ns + "@example.com", Name: "Owner", IsActive: true}
	if err := h.store.CreateUser(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetOrgUserRole(ctx, h.org, owner.ID, store.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetOrgQuotas(ctx, h.org, store.OrgQuotas{MaxExecMinutesPerMonth: 1}); err != nil {
		t.Fatal(err)
	}
	// 50 s of the minute used by an earlier crawl.
	earlier := &store.Crawl{ID: "earlier-" + h.ns, Type: store.TypeCrawl, OID: h.org, CID: uuid.New(),
		Started: time.Now().UTC(), State: store.StateComplete}
	if err := h.store.AddCrawl(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if _, err := h.store.ChargeCrawlExec(ctx, earlier.ID, &t0, t0.Add(50*time.Second), 50); err != nil {
		t.Fatal(err)
	}

	cfg := h.config()
	cfg.ExecAccountingInterval = time.Second
	cfg.Resync = time.Second
	deps := h.deps()
	deps.Mailer = email.New(email.Config{Host: "127.0.0.1", Port: h.env.Mailpit.SMTPPort}, nil)
	h.startOperatorWith(cfg, deps)
	id := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=2000&sim-page-ms=500&sim-bytes=1000"})

	// Counted while it runs, on the crawl and the org alike.
	h.waitFor("crawler seconds counted", 90*time.Second, func() bool { return h.crawl(id).CrawlExecSeconds > 0 })
	c := h.crawl(id)
	org, err := h.store.GetOrg(ctx, h.org)
	if err != nil {
		t.Fatal(err)
	}
	if got := org.CrawlExecSeconds[month]; got < 50+c.CrawlExecSeconds {
		t.Fatalf("org crawlExecSeconds %d, want at least 50 + the crawl's %d", got, c.CrawlExecSeconds)
	}
	if got := org.MonthlyExecSeconds[month]; got < min(60, 50+c.CrawlExecSeconds) {
		t.Fatalf("org monthlyExecSeconds %d after the crawl's %d", got, c.CrawlExecSeconds)
	}

	// Over the quota: the automatic pause is asked for.
	h.waitFor("the automatic pause", 90*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Spec.PausedAt != "" && j.Status.StopReason == store.StatePausedTimeQuota
	})
	j, err := h.job(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, j.Spec.PausedAt); err != nil || !strings.HasSuffix(j.Spec.PausedAt, "Z") {
		t.Fatalf("spec.pausedAt %q: %v", j.Spec.PausedAt, err)
	}
	if org, err = h.store.GetOrg(ctx, h.org); err != nil || !org.ExecMinutesQuotaReached(time.Now()) {
		t.Fatalf("org not over its quota: %+v, %v", org, err)
	}
	if org.MonthlyExecSeconds[month] != 60 {
		t.Fatalf("monthlyExecSeconds %d, want the quota's 60 (no gifted or extra minutes to charge)", org.MonthlyExecSeconds[month])
	}
	// The status and the document agree once the status caught up.
	h.waitFor("the status's crawlExecTime", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.LastUpdatedTime != nil && j.Status.CrawlExecTime == h.crawl(id).CrawlExecSeconds
	})

	// One e-mail to the owner, and no second one for this pause.
	mail := waitOwnerMail(t, h.env.Mailpit, owner.Email)
	if !strings.Contains(mail.Subject, "execution-time quota") || !strings.Contains(mail.Text, id) ||
		!strings.Contains(mail.Text, store.StatePausedTimeQuota) {
		t.Fatalf("e-mail %q:\n%s", mail.Subject, mail.Text)
	}
	if again, err := h.store.ClaimAutoPauseEmail(ctx, id); err != nil || again {
		t.Fatalf("a second e-mail could be claimed for the same pause: %v, %v", again, err)
	}
}

// waitOwnerMail waits for exactly one e-mail to to and returns it.
func waitOwnerMail(t *testing.T, mailpit *sandbox.Mailpit, to string) *sandbox.Mail {
	t.Helper()
	var found *sandbox.Mail
	err := sandbox.WaitFor(context.Background(), 60*time.Second, 100*time.Millisecond, mailpit.Process,
		func(ctx context.Context) error {
			msgs, err := mailpit.Messages(ctx, `to:"`+to+`"`)
			if err != nil {
				return err
			}
			if len(msgs) != 1 {
				return fmt.Errorf("%d e-mails to %s, want 1", len(msgs), to)
			}
			found, err = mailpit.Message(ctx, msgs[0].ID)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
