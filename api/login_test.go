package api

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// loginFrom posts a login form as a client at remoteAddr, with an
// X-Forwarded-For header when xff is not empty.
func loginFrom(s *Server, remoteAddr, xff, email, password string) resp {
	form := url.Values{"username": {email}, "password": {password}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = remoteAddr
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return resp{Code: rec.Code, Body: rec.Body.Bytes()}
}

// throttledServer is a second API on e's store with a clock the test
// moves and small limits: 3 failures per account, 6 per address, per
// 10-minute window.
func throttledServer(e *env) (*Server, *clocktesting.FakePassiveClock) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	cfg := testConfig()
	cfg.LoginFailuresPerAccount, cfg.LoginFailuresPerAddress, cfg.LoginFailureWindow = 3, 6, 10*time.Minute
	return New(cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher, Clock: clk}), clk
}

// 300 wrong passwords in a row, 8 in parallel, were all plain 400s.
// Failed logins are limited per account and per client address; over the
// limit the answer is upstream's 429 too_many_login_attempts with a
// Retry-After, until the window ends.
func TestLoginGuessingIsThrottled(t *testing.T) {
	e := newEnv(t)
	s, clk := throttledServer(e)
	const client = "198.51.100.7:4000"

	// Parallel guesses cannot slip past the limit: each is counted
	// before its password is checked.
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
	if codes[400] != 3 || codes[429] != 5 {
		t.Fatalf("8 parallel guesses: %v, want 3 x 400 and 5 x 429", codes)
	}
	r := loginFrom(s, client, "", "ADMIN@example.com", "PASSW0RD!")
	e.wantDetail(r, 429, "too_many_login_attempts")
	rec := httptest.NewRecorder()
	form := url.Values{"username": {"admin@example.com"}, "password": {"PASSW0RD!"}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	s.Handler().ServeHTTP(rec, req)
	if got := rec.Header().Get("Retry-After"); got != "600" {
		t.Fatalf("Retry-After %q, want the 600 s left in the window", got)
	}

	// Other accounts are not locked out by someone guessing this one.
	if r := loginFrom(s, "203.0.113.9:1", "", "owner@example.com", "pw-owner"); r.Code != 200 {
		t.Fatalf("another account: %d %s", r.Code, r.Body)
	}

	// The window ends: the right password works again, and a success
	// clears the account's failures.
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	if r := loginFrom(s, client, "", "admin@example.com", "PASSW0RD!"); r.Code != 200 {
		t.Fatalf("next window: %d %s", r.Code, r.Body)
	}
	for i := range 3 {
		if r := loginFrom(s, "192.0.2.50:1", "", "admin@example.com", "typo"); r.Code != 400 {
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

	// Behind a proxy on a private network the client is the address it
	// forwards; a client on the internet cannot choose one by sending the
	// header itself.
	e.wantDetail(loginFrom(s, "10.0.0.5:80", "198.51.100.7", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
	if r := loginFrom(s, "10.0.0.5:80", "198.51.100.8", "viewer@example.com", "pw-viewer"); r.Code != 200 {
		t.Fatalf("another forwarded client: %d %s", r.Code, r.Body)
	}
	e.wantDetail(loginFrom(s, "198.51.100.7:4000", "192.0.2.1", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
}

// The counters live in MongoDB, not in one process: guesses spread over
// two API replicas are limited as if they went to one.
func TestLoginLimitHoldsAcrossReplicas(t *testing.T) {
	e := newEnv(t)
	a, clk := throttledServer(e)
	b := New(a.cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher, Clock: clk})
	for i, s := range []*Server{a, b, a} {
		if r := loginFrom(s, "198.51.100.7:4000", "", "viewer@example.com", "guess"); r.Code != 400 {
			t.Fatalf("guess %d: %d %s", i+1, r.Code, r.Body)
		}
	}
	e.wantDetail(loginFrom(b, "203.0.113.9:1", "", "viewer@example.com", "pw-viewer"), 429, "too_many_login_attempts")
}

// A login for an existing e-mail took 75 ms and one for an unknown e-mail
// 2 ms. Both now compare a bcrypt hash, the unknown one a dummy: with the
// only hashing slot taken, neither can answer.
func TestUnknownAccountsCostABcryptComparison(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.PasswordHashConcurrency = 1
	s := New(cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher})
	dummyHash() // made once per process, before the slot is taken
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
	h := newPasswordHasher(2)
	if cap(h.slots) != 2 || cap(newPasswordHasher(0).slots) < 1 {
		t.Fatalf("slots %d and %d", cap(h.slots), cap(newPasswordHasher(0).slots))
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
