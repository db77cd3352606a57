package e2etest

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// WaitFor polls cond every 200ms until it returns true, and fails the
// test with the last error cond gave once timeout has passed.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitReady waits until url answers 200, for up to timeout. It gives up
// early when exited (if not nil) is closed: the server's process ended.
func WaitReady(url string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 10 * time.Second}
	for time.Now().Before(deadline) {
		if resp, err := client.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before %s answered 200", url)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within %v", url, timeout)
}
