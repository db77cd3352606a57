package api

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	testclock "k8s.io/utils/clock/testing"

	"github.com/trawlerhq/trawler/email"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/mongotest"
)

// mailEnv is an env whose e-mails go to the package's Mailpit, on a clock
// the test moves.
type mailEnv struct {
	*env
	clock *testclock.FakePassiveClock
}

func newMailEnv(t *testing.T, adjust func(*Config)) *mailEnv {
	t.Helper()
	clk := testclock.NewFakePassiveClock(time.Now())
	e := newEnvWith(t, func(cfg *Config, deps *Deps) {
		deps.Clock = clk
		deps.Mailer = email.New(email.Config{Host: "127.0.0.1", Port: mongotest.Mailpit(t).SMTPPort}, cfg.Logger)
		cfg.AppOrigin = "https://app.example.com"
		if adjust != nil {
			adjust(cfg)
		}
	})
	return &mailEnv{env: e, clock: clk}
}

// advance moves the clock and logs everyone in again (their tokens may
// have expired).
func (e *mailEnv) advance(d time.Duration) {
	e.t.Helper()
	e.clock.SetTime(e.clock.Now().Add(d))
	e.tokens[asAdmin] = e.login("admin@example.com", "PASSW0RD!")
	for _, name := range []string{asOwner, asCrawler, asViewer, asOutsider} {
		e.tokens[name] = e.login(name+"@example.com", "pw-"+name)
	}
}

// uniqueEmail is an address no other test of the run uses, so searches in
// the shared Mailpit find only this test's messages.
func uniqueEmail(prefix string) string {
	return prefix + "-" + uuid.NewString()[:8] + "@example.com"
}

// waitMail returns the newest e-mail to addr with subject.
func waitMail(t *testing.T, to, subject string) *sandbox.Mail { return waitMails(t, to, subject, 1) }

// waitMails waits for n e-mails to addr with subject and returns the
// newest.
func waitMails(t *testing.T, to, subject string, n int) *sandbox.Mail {
	t.Helper()
	var found *sandbox.Mail
	mailpit := mongotest.Mailpit(t)
	err := sandbox.WaitFor(context.Background(), 30*time.Second, 50*time.Millisecond, mailpit.Process,
		func(ctx context.Context) error {
			msgs, err := mailpit.Messages(ctx, `to:"`+to+`"`)
			if err != nil {
				return err
			}
			var ids []string // newest first
			for _, m := range msgs {
				if m.Subject == subject {
					ids = append(ids, m.ID)
				}
			}
			if len(ids) < n {
				return fmt.Errorf("%d e-mails to %s with subject %q, want %d", len(ids), to, subject, n)
			}
			found, err = mailpit.Message(ctx, ids[0])
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.To) != 1 || found.To[0].Address != to {
		t.Fatalf("e-mail to %v, want %s only", found.To, to)
	}
	return found
}

// linkIn finds the first match of pattern (with one group) in the mail's
// text and returns the group.
func linkIn(t *testing.T, m *sandbox.Mail, pattern string) string {
	t.Helper()
	match := regexp.MustCompile(pattern).FindStringSubmatch(m.Text)
	if match == nil {
		t.Fatalf("no %s in e-mail %q:\n%s", pattern, m.Subject, m.Text)
	}
	return match[1]
}
