package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"
)

// Mailpit is an SMTP server with a web UI and an HTTP API (Mailpit) on
// loopback ports: trawler sends its e-mails there, tests read them back
// through the API and people through the web UI.
type Mailpit struct {
	*Process
	SMTPPort int
	HTTPPort int
}

// StartMailpit starts Mailpit with its database and log in dir and waits
// until its API answers. It offers no TLS, and accepts any SMTP login by
// PLAIN or LOGIN only; trawler sends a password by those only over
// STARTTLS, so configure it here without email.password (with one, every
// send fails).
func StartMailpit(ctx context.Context, dir string) (*Mailpit, error) {
	path, err := Bin("mailpit")
	if err != nil {
		return nil, err
	}
	smtpPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	m := &Mailpit{SMTPPort: smtpPort, HTTPPort: httpPort, Process: &Process{
		Name: "mailpit",
		Path: path,
		Args: []string{"--listen", "127.0.0.1:" + strconv.Itoa(httpPort), "--smtp", "127.0.0.1:" + strconv.Itoa(smtpPort),
			"--database", filepath.Join(dir, "mailpit.db"), "--smtp-auth-accept-any", "--smtp-auth-allow-insecure",
			"--smtp-disable-rdns", "--max", "5000"},
		Dir:     dir,
		LogPath: filepath.Join(dir, "mailpit.log"),
	}}
	if err := m.Restart(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Restart starts Mailpit again (same ports, same messages) after Stop,
// and waits until its API answers.
func (m *Mailpit) Restart(ctx context.Context) error {
	if err := m.Process.Start(); err != nil {
		return err
	}
	return WaitFor(ctx, 20*time.Second, 20*time.Millisecond, m.Process, func(ctx context.Context) error {
		_, err := m.Messages(ctx, "")
		return err
	})
}

// SMTPAddr is host:port of the SMTP server (its host is 127.0.0.1).
func (m *Mailpit) SMTPAddr() string { return fmt.Sprintf("127.0.0.1:%d", m.SMTPPort) }

// URL is the web UI's (and API's) base URL.
func (m *Mailpit) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", m.HTTPPort) }

// MailAddress is one sender or recipient of a message.
type MailAddress struct {
	Name    string `json:"Name"`
	Address string `json:"Address"`
}

// MailSummary is a message as Mailpit lists it.
type MailSummary struct {
	ID      string        `json:"ID"`
	From    MailAddress   `json:"From"`
	To      []MailAddress `json:"To"`
	ReplyTo []MailAddress `json:"ReplyTo"`
	Subject string        `json:"Subject"`
	Created time.Time     `json:"Created"`
}

// Mail is a whole message.
type Mail struct {
	MailSummary
	Text string `json:"Text"`
}

// Messages lists the messages matching Mailpit's search query (all when
// query is empty), newest first.
func (m *Mailpit) Messages(ctx context.Context, query string) ([]MailSummary, error) {
	path := "/api/v1/messages?limit=1000"
	if query != "" {
		path = "/api/v1/search?limit=1000&query=" + url.QueryEscape(query)
	}
	var out struct {
		Messages []MailSummary `json:"messages"`
	}
	if err := m.get(ctx, path, &out); err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// Message returns the message with id.
func (m *Mailpit) Message(ctx context.Context, id string) (*Mail, error) {
	var out Mail
	if err := m.get(ctx, "/api/v1/message/"+url.PathEscape(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (m *Mailpit) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL()+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("mailpit: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mailpit: GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("mailpit: decoding %s: %w", path, err)
	}
	return nil
}
