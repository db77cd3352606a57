package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// loginThrottle keeps the login attempt counters, in fixed windows, and
// the addresses accounts logged in from, where every replica sees them:
// the part of the Store the limiter uses.
type loginThrottle interface {
	AddLoginAttempt(ctx context.Context, keys []string, start, end time.Time) ([]int64, error)
	ReleaseLoginAttempt(ctx context.Context, key string, start time.Time, forget bool) error
	PaceLoginAttempt(ctx context.Context, key string, start, now, next time.Time) (time.Time, error)
	RememberLogin(ctx context.Context, key string, until time.Time) error
	LoginRemembered(ctx context.Context, key string, now time.Time) (bool, error)
	DeleteEndedLoginWindows(ctx context.Context, t time.Time) error
}

// Pacing of an account's logins once it has failed too often.
const (
	// firstLoginPause is the pause after the first paced attempt; it
	// doubles with each further attempt, up to loginLimiter.maxPause.
	firstLoginPause = time.Second
	// knownAddressLifetime is how long an address an account logged in
	// from skips the account's pacing.
	knownAddressLifetime = 30 * 24 * time.Hour
)

// loginLimiter throttles password guessing so that nobody can aim it at
// someone else's account:
//
//   - an account and one client address together (a pair) may fail
//     perAccount times per window; then that address gets 429s for that
//     account until the window ends;
//   - one client address may fail perAddress times per window, over
//     all accounts; then it gets 429s for any account;
//   - an account that failed perAccount times per window from anywhere
//     is paced, not locked: one attempt at a time, with a pause after
//     each that starts at a second and doubles up to maxPause. Addresses
//     the account logged in from in the last 30 days skip the pacing,
//     so guesses sprayed from many addresses slow down the guessers but
//     never keep the owner out; from a new address the owner waits at
//     most maxPause for a turn.
//
// Every attempt is counted before the password is checked, so parallel
// guesses cannot slip past the limits, and a successful one is taken
// back: it clears its pair's count and does not count against its
// address or account. An attempt refused by the pacing counts against
// its address and the account, not the pair.
type loginLimiter struct {
	store      loginThrottle
	clock      clock.PassiveClock
	window     time.Duration
	perAccount int64
	perAddress int64
	maxPause   time.Duration

	// swept is the start of the last window whose predecessors this
	// process deleted; each replica sweeps once per window.
	swept atomic.Int64
}

// loginAttempt is one counted attempt and the keys it counts under.
type loginAttempt struct {
	pair, address, account string
	// known remembers the account's logins from this address.
	known string
	start time.Time
}

// newLoginAttempt spells the keys of an attempt at email from addr in
// the window starting at start.
func newLoginAttempt(email, addr string, start time.Time) loginAttempt {
	account, client := strings.ToLower(email), clientKey(addr)
	return loginAttempt{
		pair:    "pair:" + account + "|" + client,
		address: "address:" + client,
		account: "account:" + account,
		known:   "known:" + account + "|" + client,
		start:   start,
	}
}

// clientKey is what the per-address limits count a client address as:
// an IPv6 client as its /64, which one subscriber usually holds whole
// (counting single addresses would give each of them 2^64 tries).
func clientKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.WithZone("").Prefix(64) // 64 bits always fit an IPv6 address
		return p.String()
	}
	return ip.String()
}

// errTooManyLogins is upstream's answer to a login over the limit; the
// Retry-After header says when another attempt may succeed.
type errTooManyLogins struct{ retryAfter time.Duration }

func (e errTooManyLogins) Error() string {
	return fmt.Sprintf("too many login attempts, retry after %s", e.retryAfter)
}

// begin counts an attempt for email from address and refuses it with
// errTooManyLogins if the pair or the address failed too often in this
// window, or if the account is paced and it is not this address's turn.
func (l *loginLimiter) begin(ctx context.Context, email, address string) (loginAttempt, error) {
	now := l.clock.Now()
	start := now.Truncate(l.window)
	end := start.Add(l.window)
	a := newLoginAttempt(email, address, start)
	if prev := l.swept.Swap(start.Unix()); prev != start.Unix() {
		if err := l.store.DeleteEndedLoginWindows(ctx, start); err != nil {
			l.swept.Store(prev) // try again with the next attempt
			return a, err
		}
	}
	counts, err := l.store.AddLoginAttempt(ctx, []string{a.pair, a.address, a.account}, start, end)
	if err != nil {
		return a, err
	}
	if counts[0] > l.perAccount || counts[1] > l.perAddress {
		return a, errTooManyLogins{retryAfter: end.Sub(now)}
	}
	over := counts[2] - l.perAccount
	if over <= 0 || l.maxPause <= 0 {
		return a, nil
	}
	known, err := l.store.LoginRemembered(ctx, a.known, now)
	if err != nil || known {
		return a, err
	}
	busy, err := l.store.PaceLoginAttempt(ctx, a.account, start, now, now.Add(l.pause(over)))
	if err != nil {
		return a, err
	}
	if !busy.After(now) {
		return a, nil
	}
	// No password was checked, so this was no failure of the pair: the
	// owner may knock at a paced account as often as the address limit
	// allows without locking their own address out.
	if err := l.store.ReleaseLoginAttempt(ctx, a.pair, start, false); err != nil {
		return a, err
	}
	return a, errTooManyLogins{retryAfter: busy.Sub(now)}
}

// pause is the wait after the over-th attempt past an account's free
// failures: a second, doubling, at most maxPause.
func (l *loginLimiter) pause(over int64) time.Duration {
	if over > 32 { // 2^32 s is far past any maxPause, and shifts further overflow
		return l.maxPause
	}
	return min(firstLoginPause<<(over-1), l.maxPause)
}

// succeeded takes back a successful attempt and remembers the address
// the account logged in from.
func (l *loginLimiter) succeeded(ctx context.Context, a loginAttempt) error {
	if err := l.store.ReleaseLoginAttempt(ctx, a.pair, a.start, true); err != nil {
		return err
	}
	for _, key := range []string{a.address, a.account} {
		if err := l.store.ReleaseLoginAttempt(ctx, key, a.start, false); err != nil {
			return err
		}
	}
	return l.store.RememberLogin(ctx, a.known, l.clock.Now().Add(knownAddressLifetime))
}

// tooManyLogins writes upstream's 429 with a Retry-After in whole
// seconds, rounded up (at least one).
func tooManyLogins(h http.Header, e errTooManyLogins) error {
	secs := max(1, (e.retryAfter+time.Second-1)/time.Second)
	h.Set("Retry-After", strconv.Itoa(int(secs)))
	return &apiError{status: http.StatusTooManyRequests, detail: "too_many_login_attempts"}
}
