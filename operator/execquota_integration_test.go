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
	if err := h.store.ChargeCrawlsExec(ctx, []store.CrawlExecCharge{{CrawlID: earlier.ID, Since: &t0, Now: t0.Add(50 * time.Second), Seconds: 50}})[0].Err; err != nil {
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
	// The crawl is charged, then its org: wait for the org to catch up.
	var c *store.Crawl
	var org *store.Org
	h.waitFor("the org's crawlExecSeconds at least 50 + the crawl's", 30*time.Second, func() bool {
		c = h.crawl(id)
		o, err := h.store.GetOrg(ctx, h.org)
		org = o
		return err == nil && o.CrawlExecSeconds[month] >= 50+c.CrawlExecSeconds
	})
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

	// One e-mail to the owner, and no second one for this pause.
	mail := waitOwnerMail(t, h.env.Mailpit, owner.Email)
	if !strings.Contains(mail.Subject, "execution-time quota") || !strings.Contains(mail.Text, id) ||
		!strings.Contains(mail.Text, store.StatePausedTimeQuota) {
		t.Fatalf("e-mail %q:\n%s", mail.Subject, mail.Text)
	}
	// It says when the pause expires, as the workflow's lastCrawlPausedExpiry.
	pausedAt, _ := time.Parse(time.RFC3339, j.Spec.PausedAt)
	if expiry := pausedAt.Add(cfg.PausedCrawlLimit).Format(time.RFC3339); !strings.Contains(mail.Text, expiry) {
		t.Fatalf("e-mail does not give the expiry %s:\n%s", expiry, mail.Text)
	}
	if again, err := h.store.ClaimAutoPauseEmail(ctx, id); err != nil || again {
		t.Fatalf("a second e-mail could be claimed for the same pause: %v, %v", again, err)
	}
}

// TestExecQuotaGiftedThenExtra (upstream-2026 §8.6 items 3, 5 and 6, and
// §8.1 item 8's second e-mail): a crawl in an org 50 s short of its
// monthly minute ends paused_time_quota_reached in its document; paused,
// it is charged nothing; given a gifted and an extra minute and resumed,
// it uses the gifted seconds before any extra one, pauses again when both
// are spent, and the owner gets a second e-mail.
func TestExecQuotaGiftedThenExtra(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	ctx := context.Background()
	month := time.Now().UTC().Format("2006-01")
	owner := &store.User{ID: uuid.New(), Email: "owner2-" + h.ns + "@example.com", Name: "Owner", IsActive: true}
	if err := h.store.CreateUser(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetOrgUserRole(ctx, h.org, owner.ID, store.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SetOrgQuotas(ctx, h.org, store.OrgQuotas{MaxExecMinutesPerMonth: 1}); err != nil {
		t.Fatal(err)
	}
	earlier := &store.Crawl{ID: "earlier-" + h.ns, Type: store.TypeCrawl, OID: h.org, CID: uuid.New(),
		Started: time.Now().UTC(), State: store.StateComplete}
	if err := h.store.AddCrawl(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if err := h.store.ChargeCrawlsExec(ctx, []store.CrawlExecCharge{{CrawlID: earlier.ID, Since: &t0, Now: t0.Add(50 * time.Second), Seconds: 50}})[0].Err; err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.ExecAccountingInterval = time.Second
	cfg.Resync = time.Second
	deps := h.deps()
	deps.Mailer = email.New(email.Config{Host: "127.0.0.1", Port: h.env.Mailpit.SMTPPort}, nil)
	h.startOperatorWith(cfg, deps)
	id := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=5000&sim-page-ms=500&sim-bytes=1000"})

	// Item 3: the crawl itself ends up paused for the quota.
	h.waitState(id, 2*time.Minute, store.StatePausedTimeQuota)
	waitOwnerMails(t, h.env.Mailpit, owner.Email, 1)

	// Item 6: paused, it is charged nothing. The pass that paused it
	// charged its crawlers' seconds up to the pause before writing the
	// status that shows it; from there the accounting ticks every
	// second, and five ticks are watched.
	h.waitFor("the paused state in the CrawlJob status", time.Minute, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.State == store.StatePausedTimeQuota
	})
	paused := h.crawl(id).CrawlExecSeconds
	time.Sleep(5 * cfg.ExecAccountingInterval)
	if now := h.crawl(id).CrawlExecSeconds; now != paused {
		t.Fatalf("paused crawl charged: crawlExecSeconds %d, %d at the pause", now, paused)
	}

	// Item 5: a gifted and an extra minute; the gifted one goes first.
	one := int64(1)
	if err := h.store.UpdateOrgQuotas(ctx, h.org, store.QuotasUpdate{MaxExecMinutesPerMonth: &one,
		GiftedExecMinutes: &one, ExtraExecMinutes: &one, Modified: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.pause(id, true)
	h.waitState(id, time.Minute, store.StateRunning)
	h.waitFor("gifted and extra minutes spent, the crawl paused again", 3*time.Minute, func() bool {
		org, err := h.store.GetOrg(ctx, h.org)
		if err != nil {
			return false
		}
		if org.ExtraExecSecondsAvailable < 60 && org.GiftedExecSecondsAvailable > 0 {
			t.Fatalf("extra seconds used before the gifted ones: gifted %d, extra %d available",
				org.GiftedExecSecondsAvailable, org.ExtraExecSecondsAvailable)
		}
		return h.crawl(id).State == store.StatePausedTimeQuota
	})
	org, err := h.store.GetOrg(ctx, h.org)
	if err != nil {
		t.Fatal(err)
	}
	if org.GiftedExecSecondsAvailable != 0 || org.ExtraExecSecondsAvailable != 0 ||
		org.GiftedExecSeconds[month] != 60 || org.ExtraExecSeconds[month] != 60 || org.MonthlyExecSeconds[month] != 60 {
		t.Fatalf("after the second pause: available gifted %d extra %d; charged monthly %d gifted %d extra %d",
			org.GiftedExecSecondsAvailable, org.ExtraExecSecondsAvailable,
			org.MonthlyExecSeconds[month], org.GiftedExecSeconds[month], org.ExtraExecSeconds[month])
	}
	waitOwnerMails(t, h.env.Mailpit, owner.Email, 2)
}

// TestOrgPausesItsCrawl: a running 1.x crawl is paused by its org, and the
// owner gets one e-mail, read from Mailpit:
//   - set read-only (upstream-2026 §8.1 item 8): trawler's
//     paused_org_readonly (upstream meant that state; a typo gives plain
//     paused there);
//   - over its storage quota (§6): the bytes stored plus the crawl's bytes
//     not yet uploaded, paused_storage_quota_reached.
//
// Either way the crawl's pause upload is recorded.
func TestOrgPausesItsCrawl(t *testing.T) {
	for _, tc := range []struct {
		name, emailPrefix, seed, state, subject string
		change                                  func(h *harness) error
	}{
		{"read-only", "owner3", "https://example.com/?sim-pages=2000&sim-page-ms=500", store.StatePausedOrgReadOnly, "read-only",
			func(h *harness) error { return h.store.SetOrgReadOnly(context.Background(), h.org, true, "test") }},
		// 2 pages of 20 kB are more than this quota before anything is uploaded.
		{"storage quota", "owner4", "https://example.com/?sim-pages=2000&sim-page-ms=500&sim-bytes=20000", store.StatePausedStorageQuota, "storage",
			func(h *harness) error {
				return h.store.SetOrgQuotas(context.Background(), h.org, store.OrgQuotas{StorageQuota: 30000})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			besideOthers(t)
			h := newHarness(t)
			owner := h.startMailingOperator(tc.emailPrefix)
			id := h.startCrawl(crawlOpts{seed: tc.seed})
			h.waitPagesDone(id, 2)
			if err := tc.change(h); err != nil {
				t.Fatal(err)
			}
			h.waitState(id, 90*time.Second, tc.state)
			if c := h.crawl(id); len(c.Files) == 0 {
				t.Fatalf("paused crawl has no files: the pause upload was not recorded (%+v)", c)
			}
			mail := waitOwnerMails(t, h.env.Mailpit, owner.Email, 1)
			if !strings.Contains(mail.Subject, tc.subject) || !strings.Contains(mail.Text, tc.state) {
				t.Fatalf("e-mail %q:\n%s", mail.Subject, mail.Text)
			}
		})
	}
}

// waitOwnerMail waits for exactly one e-mail to to and returns it.
func waitOwnerMail(t *testing.T, mailpit *sandbox.Mailpit, to string) *sandbox.Mail {
	t.Helper()
	return waitOwnerMails(t, mailpit, to, 1)
}

// waitOwnerMails waits until exactly n e-mails went to to and returns the
// newest.
func waitOwnerMails(t *testing.T, mailpit *sandbox.Mailpit, to string, n int) *sandbox.Mail {
	t.Helper()
	var found *sandbox.Mail
	err := sandbox.WaitFor(context.Background(), 60*time.Second, 100*time.Millisecond, mailpit.Process,
		func(ctx context.Context) error {
			msgs, err := mailpit.Messages(ctx, `to:"`+to+`"`)
			if err != nil {
				return err
			}
			if len(msgs) != n {
				return fmt.Errorf("%d e-mails to %s, want %d", len(msgs), to, n)
			}
			found, err = mailpit.Message(ctx, msgs[0].ID)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// startMailingOperator adds an owner to the org and starts an operator
// that counts exec time every second and e-mails through Mailpit. It
// returns the owner.
func (h *harness) startMailingOperator(emailPrefix string) *store.User {
	h.t.Helper()
	ctx := context.Background()
	owner := &store.User{ID: uuid.New(), Email: emailPrefix + "-" + h.ns + "@example.com", Name: "Owner", IsActive: true}
	if err := h.store.CreateUser(ctx, owner); err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.SetOrgUserRole(ctx, h.org, owner.ID, store.RoleOwner); err != nil {
		h.t.Fatal(err)
	}
	cfg := h.config()
	cfg.ExecAccountingInterval = time.Second
	cfg.Resync = time.Second
	deps := h.deps()
	deps.Mailer = email.New(email.Config{Host: "127.0.0.1", Port: h.env.Mailpit.SMTPPort}, nil)
	h.startOperatorWith(cfg, deps)
	return owner
}

// TestIdleCrawlNotCountedWhileIdle: a crawl whose Redis shows nothing
// new, in an org without quotas, is not counted while it stays idle, so
// idling costs no database write: every idle interval the operator only
// looks at the org, and once the org has a quota the look counts the
// crawl, every accounting interval from then on. In an org with an
// execution-time quota it is counted every interval. No second is lost:
// its cancel counts every second since the last count.
func TestIdleCrawlNotCountedWhileIdle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quota bool
	}{{"no quota", false}, {"exec quota", true}} {
		t.Run(tc.name, func(t *testing.T) {
			besideOthers(t)
			h := newHarness(t)
			ctx := context.Background()
			if tc.quota {
				minutes := int64(1000)
				if err := h.store.UpdateOrgQuotas(ctx, h.org, store.QuotasUpdate{MaxExecMinutesPerMonth: &minutes,
					Modified: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := h.config()
			cfg.ExecAccountingInterval = time.Second
			cfg.ExecIdleAccountingInterval = 2 * time.Second
			cfg.Resync = time.Second
			h.startOperatorWith(cfg, h.deps())
			// Its second page takes an hour: the crawl runs, its Redis still.
			id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=2&sim-page-ms=3600000"})
			h.waitFor("crawler seconds counted", 90*time.Second, func() bool { return h.crawl(id).CrawlExecSeconds > 0 })

			var counted int64
			if tc.quota {
				counted = h.crawl(id).CrawlExecSeconds
				h.waitFor("counted again while idle", 30*time.Second, func() bool {
					return h.crawl(id).CrawlExecSeconds >= counted+3
				})
			} else {
				// The counts of its start (while its Redis still changed) end.
				h.waitFor("no count for three intervals", time.Minute, func() bool {
					before := h.crawl(id).CrawlExecSeconds
					time.Sleep(3 * cfg.ExecAccountingInterval)
					counted = h.crawl(id).CrawlExecSeconds
					return counted == before
				})
				time.Sleep(3 * cfg.ExecIdleAccountingInterval) // the window watched (three looks), not a synchronisation
				if now := h.crawl(id).CrawlExecSeconds; now != counted {
					t.Fatalf("idle crawl counted: crawlExecSeconds %d, %d three idle intervals before", now, counted)
				}
				minutes := int64(1000)
				if err := h.store.UpdateOrgQuotas(ctx, h.org, store.QuotasUpdate{MaxExecMinutesPerMonth: &minutes,
					Modified: time.Now()}); err != nil {
					t.Fatal(err)
				}
				h.waitFor("the idle crawl counted once its org has a quota", 30*time.Second, func() bool {
					return h.crawl(id).CrawlExecSeconds > counted
				})
				counted = h.crawl(id).CrawlExecSeconds
				h.waitFor("counted every interval since", 30*time.Second, func() bool {
					return h.crawl(id).CrawlExecSeconds >= counted+3
				})
			}
			// A cancel (the crawler is mid-page: a stop would wait an hour for
			// it) is counted before the pods go.
			lastRead := time.Now()
			counted = h.crawl(id).CrawlExecSeconds
			if err := h.launch.CancelCrawl(ctx, id); err != nil {
				t.Fatal(err)
			}
			least := counted + int64(time.Since(lastRead)/time.Second)
			h.waitFor(fmt.Sprintf("crawlExecSeconds at least %d after the cancel (the idle seconds counted)", least),
				time.Minute, func() bool { return h.crawl(id).CrawlExecSeconds >= least })
		})
	}
}
