// Package email sends trawler's plain-text e-mails (invites, verification,
// password reset) over SMTP, or only logs them when no SMTP server is
// configured, as upstream does. It imports nothing else of trawler; the
// API declares the interface it consumes and main wires a Sender in.
package email

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	mail "github.com/wneessen/go-mail"
)

// Config is where and how to send; main fills it from the settings
// table. An empty Host means "log only".
type Config struct {
	// Host and Port of the SMTP server.
	Host string
	Port int
	// Sender is the SMTP login and, without ReplyTo, the From address.
	Sender string
	// Password, when set, makes the client log in with the strongest
	// mechanism the server offers; PLAIN and LOGIN only over STARTTLS
	// (without TLS: SCRAM, NTLM or CRAM-MD5).
	Password string
	// ReplyTo is the From and Reply-To address (default Sender).
	ReplyTo string
	// UseTLS requires STARTTLS; otherwise STARTTLS is used when offered.
	UseTLS bool
}

// sendTimeout bounds one delivery, connection included.
const sendTimeout = 30 * time.Second

// Sender delivers messages. Build it with New; it is safe for concurrent
// use (each message uses its own connection).
type Sender struct {
	cfg Config
	log *slog.Logger
}

// New returns a Sender for cfg that logs to log.
func New(cfg Config, log *slog.Logger) *Sender {
	if cfg.ReplyTo == "" {
		cfg.ReplyTo = cfg.Sender
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sender{cfg: cfg, log: log}
}

// Enabled reports whether messages go to an SMTP server (not only the log).
func (s *Sender) Enabled() bool { return s.cfg.Host != "" }

// Send delivers one plain-text message to to. Without an SMTP host it logs
// the whole message instead, links included, so that a person running
// trawler without mail can still follow them; with one, it logs only who
// got which subject (bodies carry tokens).
func (s *Sender) Send(ctx context.Context, to, subject, body string) error {
	if !s.Enabled() {
		s.log.Info("no SMTP server configured, not sending e-mail", "to", to, "subject", subject, "body", body)
		return nil
	}
	msg := mail.NewMsg()
	from := s.cfg.ReplyTo
	if from == "" {
		from = "trawler@localhost"
	}
	if err := msg.From(from); err != nil {
		return fmt.Errorf("e-mail sender %q: %w", from, err)
	}
	if err := msg.ReplyTo(from); err != nil {
		return fmt.Errorf("e-mail reply-to %q: %w", from, err)
	}
	if err := msg.To(to); err != nil {
		return fmt.Errorf("e-mail recipient %q: %w", to, err)
	}
	msg.Subject(subject)
	msg.SetBodyString(mail.TypeTextPlain, body)

	client, err := s.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("sending e-mail to %s: %w", to, err)
	}
	s.log.Info("sent e-mail", "to", to, "subject", subject)
	return nil
}

func (s *Sender) client() (*mail.Client, error) {
	opts := []mail.Option{mail.WithPort(s.cfg.Port), mail.WithTimeout(sendTimeout)}
	if s.cfg.UseTLS {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if s.cfg.Password != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover),
			mail.WithUsername(s.cfg.Sender), mail.WithPassword(s.cfg.Password))
	}
	c, err := mail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("configuring SMTP client: %w", err)
	}
	return c, nil
}
