package api

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	clocktesting "k8s.io/utils/clock/testing"
)

// loginFrom posts a login form as a client at remoteAddr, with an
// X-Forwarded-For header when xff is not empty.
func loginFrom(s *Server, remoteAddr, xff, email, password string) resp {
	rec := loginRecorded(s, remoteAddr, xff, email, password)
	return resp{Code: rec.Code, Body: rec.Body.Bytes()}
}

// loginRecorded is loginFrom with the whole response, headers included.
func loginRecorded(s *Server, remoteAddr, xff, email, password string) *httptest.ResponseRecorder {
	form := url.Values{"username": {email}, "password": {password}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = remoteAddr
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// retryAfter is a 429's Retry-After in seconds (0 if there is none).
func retryAfter(rec *httptest.ResponseRecorder) int {
	n, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
	return n
}

// throttledServer is a second API on e's store with a clock the test
// moves and small limits: 3 failures per account and address, 6 per
// address, per 10-minute window; paced accounts wait at most 8 s.
func throttledServer(e *env, adjust ...func(*Config)) (*Server, *clocktesting.FakePassiveClock) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	cfg := testConfig()
	cfg.LoginFailuresPerAccount, cfg.LoginFailuresPerAddress, cfg.LoginFailureWindow = 3, 6, 10*time.Minute
	cfg.LoginAccountMaxDelay = 8 * time.Second
	for _, f := range adjust {
		f(&cfg)
	}
	return New(cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher, Clock: clk}), clk
}

// 300 wrong passwords in a row, 8 in parallel, were all plain 400s.
// Failed logins are limited per account and client address together and
// per client address; over a limit the answer is upstream's 429
// too_many_login_attempts with a Retry-After, until the window ends.
func TestLoginGuessingIsThrottled(t *testing.T) {
	e := newEnv(t)
	s, clk := throttledServer(e)
	const client = "198.51.100.7:4000"

	// Parallel guesses cannot slip past the limit: each is counted
	// before its password is checked. Refused guesses count against the
	// account too, so in parallel an attempt that is third for the pair
	// may already be past the account's free failures and be paced:
	// between one and three passwords are checked, never more.
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r := loginFrom(s, client, "", "admin@example.com", "guess")
			mu.Lock()
			codes[r.Code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[400] < 1 || codes[400] > 3 || codes[400]+codes[429] != 8 {
		t.Fatalf("8 parallel guesses: %v, want 1 to 3 x 400 and the rest 429", codes)
	}
	rec := loginRecorded(s, client, "", "ADMIN@example.com", "PASSW0RD!")
	e.wantDetail(resp{Code: rec.Code, Body: rec.Body.Bytes()}, 429, "too_many_login_attempts")
	if got := retryAfter(rec); got != 600 {
		t.Fatalf("Retry-After %d, want the 600 s left in the window", got)
	}

	// Other accounts are not locked out by someone guessing this one.
	if r := loginFrom(s, "203.0.113.9:1", "", "owner@example.com", "pw-owner"); r.Code != 200 {
		t.Fatalf("another account: %d %s", r.Code, r.Body)
	}

	// The window ends: the right password works again, and a success
	// clears the failures of the account at that address.
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	if r := loginFrom(s, client, "", "admin@example.com", "PASSW0RD!"); r.Code != 200 {
		t.Fatalf("next window: %d %s", r.Code, r.Body)
	}
	for i := range 3 {
		if r := loginFrom(s, client, "", "admin@example.com", "typo"); r.Code != 400 {
			t.Fatalf("failure %d after a success: %d %s", i+1, r.Code, r.Body)
		}
	}

	// One address guessing many accounts: 6 failures, then 429 for any
	// account from there, even a right password.
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	for i, user := range []string{"a", "b", "c", "d", "e", "f"} {
		if r := loginFrom(s, client, "", user+"@example.com", "x"); r.Code != 400 {
			t.Fatalf("address failure %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	e.wantDetail(loginFrom(s, client, "", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	if r := loginFrom(s, "192.0.2.99:1", "", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("from another address: %d %s", r.Code, r.Body)
	}
}

// Five wrong passwords for admin@example.com, from any mix of addresses,
// locked the right password out for 15 minutes. Now guesses sprayed
// from many addresses lock only those addresses and pace the account:
// the owner gets in at once from an address they logged in from before,
// and within the pause from a new one; the guessers get one turn per
// pause between them.
func TestLoginLockoutCannotBeAimed(t *testing.T) {
	e := newEnv(t)
	s, clk := throttledServer(e)
	const home, attacker = "192.0.2.10:1", "203.0.113.%d:1"
	if r := loginFrom(s, home, "", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("first login: %d %s", r.Code, r.Body)
	}

	// 10 addresses, 3 guesses each: 30 failures of the account, each
	// address within its own limits until its third.
	guessed := 0
	for i := range 10 {
		for range 3 {
			clk.SetTime(clk.Now().Add(time.Second))
			switch r := loginFrom(s, strings.Replace(attacker, "%d", strconv.Itoa(i), 1), "", "viewer@example.com", "guess"); r.Code {
			case 400:
				guessed++
			case 429:
			default:
				t.Fatalf("guess: %d %s", r.Code, r.Body)
			}
		}
	}
	// 3 free failures, then a turn per pause (1 s, 2 s, ... 8 s) while
	// the guesses came a second apart.
	if guessed < 4 || guessed > 3+6 {
		t.Fatalf("%d of 30 sprayed guesses checked a password, want the 3 free ones and a paced few", guessed)
	}

	// The owner at home: in at once, however paced the account is.
	if r := loginFrom(s, home, "", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("owner at home: %d %s", r.Code, r.Body)
	}

	// The owner somewhere new waits for a turn, at most the longest
	// pause; knocking meanwhile does not lock their address out.
	const away = "198.51.100.20:1"
	var wait int
	for range 5 {
		rec := loginRecorded(s, away, "", "viewer@example.com", "pw-viewer")
		if rec.Code == 200 {
			t.Fatal("a paced account let a new address in without its turn")
		}
		if wait = retryAfter(rec); rec.Code != 429 || wait < 1 || wait > 8 {
			t.Fatalf("owner away: %d, Retry-After %d, want 429 within 8 s", rec.Code, wait)
		}
	}
	clk.SetTime(clk.Now().Add(time.Duration(wait) * time.Second))
	if r := loginFrom(s, away, "", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("owner away after %d s: %d %s", wait, r.Code, r.Body)
	}
	// That address is now known: no more waiting there.
	if r := loginFrom(s, away, "", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("owner away again: %d %s", r.Code, r.Body)
	}

	// A guesser's own address stays locked for the window.
	rec := loginRecorded(s, strings.Replace(attacker, "%d", "0", 1), "", "viewer@example.com", "pw-viewer")
	if rec.Code != 429 || retryAfter(rec) < 60 {
		t.Fatalf("guessing address: %d, Retry-After %d", rec.Code, retryAfter(rec))
	}
}

// The pause between paced attempts starts at a second, doubles and
// stops at the configured longest; 0 turns pacing off.
func TestLoginPause(t *testing.T) {
	l := &loginLimiter{maxPause: 30 * time.Second}
	var got []time.Duration
	for over := int64(1); over <= 7; over++ {
		got = append(got, l.pause(over))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("pauses %v, want %v seconds", got, want)
		}
	}
	if l.pause(1<<40) != 30*time.Second {
		t.Fatal("a huge count overflowed the pause")
	}

	e := newEnv(t)
	s, _ := throttledServer(e, func(c *Config) { c.LoginAccountMaxDelay = 0 })
	for i := range 6 {
		addr := "203.0.113." + strconv.Itoa(i) + ":1"
		for range 3 {
			if r := loginFrom(s, addr, "", "viewer@example.com", "guess"); r.Code != 400 {
				t.Fatalf("unpaced guess: %d %s", r.Code, r.Body)
			}
		}
	}
}

// X-Forwarded-For was believed from any client on a private network, so
// a client there chose which address the per-address limit counted. It
// is believed only from the configured trusted proxies (none by
// default).
func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	e := newEnv(t)
	s, _ := throttledServer(e)
	for i := range 6 {
		xff := "198.51.100." + strconv.Itoa(i)
		if r := loginFrom(s, "10.0.0.5:80", xff, "viewer@example.com", "guess"+strconv.Itoa(i)); r.Code != 400 && r.Code != 429 {
			t.Fatalf("guess %d: %d %s", i, r.Code, r.Body)
		}
	}
	e.wantDetail(loginFrom(s, "10.0.0.5:80", "198.51.100.99", "owner@example.com", "pw-owner"), 429, "too_many_login_attempts")

	trusted, err := ParseTrustedProxies("10.0.0.0/8, 2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	s, _ = throttledServer(e, func(c *Config) { c.TrustedProxies = trusted })
	for i, user := range []string{"a", "b", "c", "d", "e", "f"} {
		if r := loginFrom(s, "10.0.0.5:80", "198.51.100.7", user+"@example.com", "x"); r.Code != 400 {
			t.Fatalf("forwarded failure %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	// The forwarded client is locked; others behind the same proxy, or
	// behind a chain of trusted ones, are not.
	e.wantDetail(loginFrom(s, "10.0.0.5:80", "198.51.100.7", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	e.wantDetail(loginFrom(s, "[2001:db8::1]:80", "198.51.100.7, 10.1.2.3", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	if r := loginFrom(s, "10.0.0.5:80", "198.51.100.8", "owner@example.com", "pw-owner"); r.Code != 200 {
		t.Fatalf("another forwarded client: %d %s", r.Code, r.Body)
	}
	// A client that is no trusted proxy cannot pick an address.
	e.wantDetail(loginFrom(s, "198.51.100.7:4000", "192.0.2.1", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	if r := loginFrom(s, "10.9.9.9:1", "", "crawler@example.com", "pw-crawler"); r.Code != 200 {
		t.Fatalf("the proxy itself: %d %s", r.Code, r.Body)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8,192.168.1.7 ,, ::ffff:172.16.0.1, fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.168.1.7/32", "172.16.0.1/32", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != netip.MustParsePrefix(want[i]) {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	if none, err := ParseTrustedProxies(""); err != nil || len(none) != 0 {
		t.Fatalf("empty: %v %v", none, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.local", "10.0.0"} {
		if _, err := ParseTrustedProxies(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// An IPv6 client counts as its /64: stepping through the addresses of
// one subscriber's network buys no more guesses.
func TestLoginLimitCountsIPv6By64(t *testing.T) {
	for addr, want := range map[string]string{
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::ffff":   "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"::ffff:192.0.2.1":     "192.0.2.1",
		"192.0.2.1":            "192.0.2.1",
		"":                     "",
	} {
		if got := clientKey(addr); got != want {
			t.Errorf("%q counts as %q, want %q", addr, got, want)
		}
	}
	e := newEnv(t)
	s, _ := throttledServer(e)
	for i := range 6 {
		if r := loginFrom(s, "[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:1", "", "u"+strconv.Itoa(i)+"@example.com", "x"); r.Code != 400 {
			t.Fatalf("failure %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	e.wantDetail(loginFrom(s, "[2001:db8:1:2::99]:1", "", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
}

// The counters live in MongoDB, not in one process: guesses spread over
// two API replicas are limited as if they went to one, and a paced
// account's turn is taken once for both.
func TestLoginLimitHoldsAcrossReplicas(t *testing.T) {
	e := newEnv(t)
	a, clk := throttledServer(e)
	b := New(a.cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher, Clock: clk})
	for i, s := range []*Server{a, b, a} {
		if r := loginFrom(s, "198.51.100.7:4000", "", "viewer@example.com", "guess"); r.Code != 400 {
			t.Fatalf("guess %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	e.wantDetail(loginFrom(b, "198.51.100.7:4000", "", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	if r := loginFrom(a, "203.0.113.1:1", "", "viewer@example.com", "guess"); r.Code != 400 {
		t.Fatalf("first paced turn: %d %s", r.Code, r.Body)
	}
	e.wantDetail(loginFrom(b, "203.0.113.2:1", "", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
}

// A login for an existing e-mail took 75 ms and one for an unknown e-mail
// 2 ms. Both now compare a bcrypt hash, the unknown one a dummy: with the
// only hashing slot taken, neither can answer.
func TestUnknownAccountsCostABcryptComparison(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.PasswordHashConcurrency = 1
	s := New(cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher})
	s.passwords.dummy() // made once, before the slot is taken
	for _, email := range []string{"nobody@example.com", "admin@example.com"} {
		s.passwords.slots <- struct{}{} // take the only slot
		done := make(chan resp, 1)
		go func() { done <- loginFrom(s, "192.0.2.1:1", "", email, "wrong") }()
		select {
		case r := <-done:
			t.Fatalf("%s: answered %d %s without comparing a password hash", email, r.Code, r.Body)
		case <-time.After(300 * time.Millisecond):
		}
		<-s.passwords.slots
		e.wantDetail(<-done, 400, "LOGIN_BAD_CREDENTIALS")
	}
}

// bcrypt runs in a bounded number of slots; a caller that gives up while
// waiting for one leaves without hashing.
func TestPasswordHasherBoundsConcurrency(t *testing.T) {
	h := newPasswordHasher(2, bcrypt.MinCost)
	if cap(h.slots) != 2 || cap(newPasswordHasher(0, 0).slots) < 1 {
		t.Fatalf("slots %d and %d", cap(h.slots), cap(newPasswordHasher(0, 0).slots))
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	active, peak := 0, 0
	for range 5 {
		wg.Go(func() {
			_ = h.run(context.Background(), func() {
				mu.Lock()
				active++
				peak = max(peak, active)
				mu.Unlock()
				<-release
				mu.Lock()
				active--
				mu.Unlock()
			})
		})
	}
	waitFor(t, "two hashes running", 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return active == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.run(ctx, func() { t.Error("ran without a slot") }); err == nil {
		t.Fatal("a canceled caller got a slot")
	}
	close(release)
	wg.Wait()
	if peak != 2 {
		t.Fatalf("peak %d hashes at once, want 2", peak)
	}
	hash, err := h.hash(context.Background(), strings.Repeat("p", 100))
	if err != nil {
		t.Fatal(err)
	}
	// Over 72 bytes the rest is ignored, as upstream's passlib does.
	if ok, _ := h.check(context.Background(), hash, strings.Repeat("p", 72)+"different"); !ok {
		t.Fatal("long password not truncated to 72 bytes")
	}
	if ok, _ := h.check(context.Background(), "", "anything"); ok {
		t.Fatal("an unknown account matched")
	}
}

// Hashes, the dummy one for unknown accounts included, are made at the
// configured cost: bcrypt's default unless set.
func TestPasswordHasherCost(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, bcrypt.DefaultCost}, {bcrypt.MinCost, bcrypt.MinCost}, {6, 6}} {
		h := newPasswordHasher(1, tc.set)
		hash, err := h.hash(context.Background(), "pw")
		if err != nil {
			t.Fatal(err)
		}
		for name, hash := range map[string]string{"hash": hash, "dummy hash": h.dummy()} {
			if cost, err := bcrypt.Cost([]byte(hash)); err != nil || cost != tc.want {
				t.Errorf("cost %d set: %s at cost %d (%v), want %d", tc.set, name, cost, err, tc.want)
			}
		}
	}
}
