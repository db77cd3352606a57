package api

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Upstream's exact subjects; the bodies are trawler's own words around
// the links upstream's web app expects.
const (
	subjectVerify = "Welcome to Browsertrix Cloud, Verify your Registration"
	subjectReset  = "Password Reset"
)

func inviteSubject(orgName string) string {
	return fmt.Sprintf("You've been invited to join %q on Browsertrix Cloud", orgName)
}

// logMailer stands in when main gives no Mailer: messages only go to the log.
type logMailer struct{ log *slog.Logger }

func (m logMailer) Send(_ context.Context, to, subject, body string) error {
	m.log.Info("not sending e-mail (no mailer)", "to", to, "subject", subject, "body", body)
	return nil
}

// mailAttempts and mailRetryDelay pace the retries of a failed e-mail.
const (
	mailAttempts   = 3
	mailRetryDelay = 2 * time.Second
	mailTimeout    = time.Minute
)

// sendMail delivers an e-mail in the background, so a slow or failing
// mail server never delays or fails the request that caused it (the
// invite or account change is already stored); failures are retried a
// few times and then logged.
func (s *Server) sendMail(to, subject, body string) {
	s.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), mailTimeout)
		defer cancel()
		var err error
		for attempt := 1; attempt <= mailAttempts; attempt++ {
			if err = s.mail.Send(ctx, to, subject, body); err == nil {
				return
			}
			select {
			case <-ctx.Done():
				attempt = mailAttempts
			case <-time.After(time.Duration(attempt) * mailRetryDelay):
			}
		}
		s.log.Error("sending e-mail failed", "to", to, "subject", subject, "err", err)
	})
}

// WaitForBackground waits until the e-mails being sent are done (tests
// call it before dropping their database).
func (s *Server) WaitForBackground() { s.background.Wait() }

// origin is scheme://host for links: from X-Forwarded-Proto and Host when
// a proxy set them, else the configured AppOrigin, else the request's own.
func (s *Server) origin(c echo.Context) string {
	r := c.Request()
	if proto := r.Header.Get("X-Forwarded-Proto"); proto != "" && r.Host != "" {
		return proto + "://" + r.Host
	}
	if s.cfg.AppOrigin != "" {
		return strings.TrimSuffix(s.cfg.AppOrigin, "/")
	}
	return c.Scheme() + "://" + r.Host
}

func (s *Server) mailNewUserInvite(c echo.Context, inv *store.Invite, org *store.Org) {
	link := fmt.Sprintf("%s/join/%s?email=%s", s.origin(c), inv.ID, inv.Email)
	body := fmt.Sprintf(`Hello,

%s has invited you to join the organization "%s" on Browsertrix Cloud.

To accept, create your account here:
%s

Your invite code is: %s

This invite expires in %s.
`, inv.InviterEmail, org.Name, link, inv.ID, humanDuration(s.cfg.InviteLifetime))
	s.sendMail(inv.Email, inviteSubject(org.Name), body)
}

func (s *Server) mailExistingUserInvite(c echo.Context, inv *store.Invite, org *store.Org, invitee *store.User, inviterName string) {
	link := fmt.Sprintf("%s/invite/accept/%s?email=%s", s.origin(c), store.InviteKey(inv.ID), invitee.Email)
	body := fmt.Sprintf(`Hello %s,

%s has invited you to join the organization "%s" on Browsertrix Cloud.

Log in and accept the invite here:
%s

This invite expires in %s.
`, invitee.Name, inviterName, org.Name, link, humanDuration(s.cfg.InviteLifetime))
	s.sendMail(invitee.Email, inviteSubject(org.Name), body)
}

func (s *Server) mailVerification(origin string, u *store.User, token string) {
	body := fmt.Sprintf(`Welcome to Browsertrix Cloud, %s!

Please verify your e-mail address by opening this link:
%s/verify?token=%s

Or enter this verification token: %s
`, u.Name, origin, token, token)
	s.sendMail(u.Email, subjectVerify, body)
}

func (s *Server) mailPasswordReset(origin string, u *store.User, token string) {
	body := fmt.Sprintf(`Hello %s,

Someone asked to reset the password of your Browsertrix Cloud account. If it was you, choose a
new password here within the next hour:
%s/reset-password?token=%s

If it was not you, ignore this e-mail; your password stays as it is.
`, u.Name, origin, token)
	s.sendMail(u.Email, subjectReset, body)
}

// humanDuration says d in days or hours for an e-mail.
func humanDuration(d time.Duration) string {
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.Round(time.Minute).String()
}

// mailJobFailed tells the superuser that a background job gave up after
// tries, with what went wrong and how to run it again.
func (s *Server) mailJobFailed(job *store.BackgroundJob, tries int, cause error) {
	if s.cfg.SuperuserEmail == "" {
		return
	}
	body := fmt.Sprintf("The background job %s (%s, org %s) failed %d times and was given up.\n\n"+
		"Last error: %v\n\nOnce the cause is fixed, POST /api/orgs/all/jobs/%s/retry runs it again.\n",
		job.ID, job.Type, job.OID, tries, cause, job.ID)
	s.sendMail(s.cfg.SuperuserEmail, "Failed background job: "+job.ID, body)
}
