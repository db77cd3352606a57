package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// loginThrottle keeps the login attempt counters, in fixed windows, where
// every replica sees them: the part of the Store the limiter uses.
type loginThrottle interface {
	AddLoginAttempt(ctx context.Context, keys []string, start, end time.Time) ([]int64, error)
	ReleaseLoginAttempt(ctx context.Context, key string, start time.Time, forget bool) error
	DeleteEndedLoginWindows(ctx context.Context, t time.Time) error
}

// loginLimiter refuses logins for an account, or from a client address,
// that failed too often in the current window. Every attempt is counted
// before the password is checked, so parallel guesses cannot slip past
// the limit, and a successful one is taken back: it clears its account's
// count and does not count against its address.
type loginLimiter struct {
	store      loginThrottle
	clock      clock.PassiveClock
	window     time.Duration
	perAccount int64
	perAddress int64

	// swept is the start of the last window whose predecessors this
	// process deleted; each replica sweeps once per window.
	swept atomic.Int64
}

// loginAttempt is one counted attempt.
type loginAttempt struct {
	account, address string
	start            time.Time
}

// errTooManyLogins is upstream's answer to a login over the limit; the
// Retry-After header says when the window ends.
type errTooManyLogins struct{ retryAfter time.Duration }

func (e errTooManyLogins) Error() string {
	return fmt.Sprintf("too many login attempts, retry after %s", e.retryAfter)
}

// begin counts an attempt for email from address and refuses it with
// errTooManyLogins if either has failed too often in this window.
func (l *loginLimiter) begin(ctx context.Context, email, address string) (loginAttempt, error) {
	now := l.clock.Now()
	start := now.Truncate(l.window)
	end := start.Add(l.window)
	a := loginAttempt{account: "account:" + strings.ToLower(email), address: "address:" + address, start: start}
	if prev := l.swept.Swap(start.Unix()); prev != start.Unix() {
		if err := l.store.DeleteEndedLoginWindows(ctx, start); err != nil {
			l.swept.Store(prev) // try again with the next attempt
			return a, err
		}
	}
	counts, err := l.store.AddLoginAttempt(ctx, []string{a.account, a.address}, start, end)
	if err != nil {
		return a, err
	}
	if counts[0] > l.perAccount || counts[1] > l.perAddress {
		return a, errTooManyLogins{retryAfter: end.Sub(now)}
	}
	return a, nil
}

// succeeded takes back a successful attempt.
func (l *loginLimiter) succeeded(ctx context.Context, a loginAttempt) error {
	if err := l.store.ReleaseLoginAttempt(ctx, a.account, a.start, true); err != nil {
		return err
	}
	return l.store.ReleaseLoginAttempt(ctx, a.address, a.start, false)
}

// tooManyLogins writes upstream's 429 with a Retry-After in seconds.
func tooManyLogins(h http.Header, e errTooManyLogins) error {
	h.Set("Retry-After", strconv.Itoa(int(e.retryAfter.Seconds()+0.999)))
	return &apiError{status: http.StatusTooManyRequests, detail: "too_many_login_attempts"}
}
