package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// bcrypt takes tens of milliseconds of one CPU by design. Run without a
// bound, a handful of concurrent logins (good or bad) take every core and
// every other request waits behind them; so each hash and comparison
// holds one of a few slots, leaving the other cores to the rest of the API.

// passwordHasher runs bcrypt in a bounded number of slots.
type passwordHasher struct {
	slots chan struct{}
	cost  int
	// dummy is a hash of a random password nobody knows, made once at
	// cost, for the comparisons of logins to unknown accounts.
	dummy func() string
}

// newPasswordHasher allows n bcrypt computations at once; n <= 0 means
// half the CPUs this process may use, at least one. It makes hashes at
// cost; below bcrypt's minimum, at bcrypt's default.
func newPasswordHasher(n, cost int) *passwordHasher {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if cost < bcrypt.MinCost {
		cost = bcrypt.DefaultCost
	}
	return &passwordHasher{slots: make(chan struct{}, n), cost: cost, dummy: sync.OnceValue(func() string {
		h, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), cost)
		if err != nil {
			panic(fmt.Sprintf("hashing the dummy password: %v", err)) // only fails for an over-long input or a cost over the maximum
		}
		return string(h)
	})}
}

// run runs fn in a slot, waiting for one as long as ctx allows.
func (h *passwordHasher) run(ctx context.Context, fn func()) error {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting to hash a password: %w", ctx.Err())
	}
	defer func() { <-h.slots }()
	fn()
	return nil
}

// bcryptInput is pw as bcrypt sees it: bcrypt rejects passwords over 72
// bytes, upstream's passlib silently truncates, so do the same rather
// than refuse an existing password.
func bcryptInput(pw string) []byte {
	b := []byte(pw)
	if len(b) > 72 {
		b = b[:72]
	}
	return b
}

// hash is bcrypt at the hasher's cost.
func (h *passwordHasher) hash(ctx context.Context, pw string) (string, error) {
	var hash []byte
	var err error
	if werr := h.run(ctx, func() { hash, err = bcrypt.GenerateFromPassword(bcryptInput(pw), h.cost) }); werr != nil {
		return "", werr
	}
	if err != nil {
		return "", fmt.Errorf("hashing password: %w", err)
	}
	return string(hash), nil
}

// check reports whether pw matches hash. An empty hash (no such user) is
// compared with a dummy hash of the same cost, so that an unknown e-mail
// costs as much time as a wrong password and the timing tells nothing.
func (h *passwordHasher) check(ctx context.Context, hash, pw string) (bool, error) {
	known := hash != ""
	if !known {
		hash = h.dummy()
	}
	var err error
	if werr := h.run(ctx, func() { err = bcrypt.CompareHashAndPassword([]byte(hash), bcryptInput(pw)) }); werr != nil {
		return false, werr
	}
	return known && err == nil, nil
}
