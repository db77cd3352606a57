package email

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestLogsWithoutSMTP: with no SMTP host the whole message, link
// included, goes to the log, and sending succeeds.
func TestLogsWithoutSMTP(t *testing.T) {
	var buf bytes.Buffer
	s := New(Config{}, slog.New(slog.NewTextHandler(&buf, nil)))
	if s.Enabled() {
		t.Fatal("enabled without a host")
	}
	if err := s.Send(context.Background(), "a@example.com", "Password Reset", "open https://x.example/reset?token=abc"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a@example.com", "Password Reset", "https://x.example/reset?token=abc"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q: %s", want, buf.String())
		}
	}
}

// TestUnreachableServer: a refused connection is an error naming the
// recipient (the API retries and logs it).
func TestUnreachableServer(t *testing.T) {
	s := New(Config{Host: "127.0.0.1", Port: 1}, slog.New(slog.DiscardHandler))
	err := s.Send(context.Background(), "a@example.com", "s", "b")
	if err == nil || !strings.Contains(err.Error(), "a@example.com") {
		t.Fatalf("err = %v", err)
	}
}
