// Package webhook sends an org's event webhooks: it turns events (a crawl
// started or finished, ...) into notifications with upstream's exact JSON
// bodies, stores them, and delivers them in the background. A failed
// delivery is retried on a schedule that suits receivers that are down
// for minutes or hours: the first retry RetryDelay later, then at
// doubling intervals up to MaxRetryDelay, MaxAttempts attempts in all; a
// retry asked for through the API is one attempt, made at once. The
// notifications collection is the outbox: an attempt that was pending
// when the process stopped is taken up again after a restart (at least
// once), and several replicas share the work through leases. Neither a
// slow nor a failing receiver ever delays the caller that reported the
// event.
//
// Receivers are user-given addresses, so deliveries go through
// netpolicy's connect-time guard: a URL that leads to an internal address
// (literally, or through a name that resolves there) is refused when it
// is used, not only when it is set.
//
// It imports only store and netpolicy; the API and the operator declare
// the small interfaces they use and main wires one Notifier into both.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
)

// Config are the delivery settings; main fills them from the settings
// table, and New refuses a Config that lacks one.
type Config struct {
	// MaxAttempts is how many attempts the deliverer makes of a
	// notification on its own (the first delivery and its retries);
	// retries asked for through the API come on top.
	MaxAttempts int
	// RetryDelay is the wait after the first failed attempt; it doubles
	// after each further failure, up to MaxRetryDelay.
	RetryDelay, MaxRetryDelay time.Duration
	// Timeout bounds one POST, redirects included.
	Timeout time.Duration
	// PollInterval is how often the outbox is read for deliveries that
	// are due without this process having been told (after a restart, or
	// from another replica).
	PollInterval time.Duration
	// Workers bounds concurrent deliveries.
	Workers int
}

func (c Config) validate() error {
	if c.MaxAttempts <= 0 || c.RetryDelay <= 0 || c.MaxRetryDelay <= 0 || c.Timeout <= 0 || c.PollInterval <= 0 || c.Workers <= 0 {
		return fmt.Errorf("webhook: every Config field must be positive: %+v", c)
	}
	return nil
}

// Store is what the Notifier needs from the database; *store.Mongo
// implements it.
type Store interface {
	GetOrg(ctx context.Context, id uuid.UUID) (*store.Org, error)
	AddNotification(ctx context.Context, n *store.Notification) (bool, error)
	ClaimNotification(ctx context.Context, now time.Time, lease time.Duration) (*store.NotificationClaim, error)
	RecordNotificationAttempt(ctx context.Context, id, lease uuid.UUID, a store.DeliveryAttempt) error
	CancelNotificationDelivery(ctx context.Context, id, lease uuid.UUID) error
}

var _ Store = (*store.Mongo)(nil)

// Observer learns the outcome of every delivery attempt, in one place, for
// metrics.
type Observer interface {
	ObserveDelivery(event string, success bool, took time.Duration)
}

// ResourceURLs returns the download paths of a finished crawl's files as
// replay.json shows them (relative ones get the org's origin prepended).
type ResourceURLs func(ctx context.Context, c *store.Crawl) ([]string, error)

// Deps are the Notifier's collaborators; Store is required.
type Deps struct {
	Store Store
	// Resources lists a finished crawl's file paths (default: none).
	Resources ResourceURLs
	// Allowed are the internal ranges receivers may be at on purpose
	// (outbound.allowed_cidrs); every other internal address is refused
	// at connect time.
	Allowed netpolicy.AllowList
	// Observer, when set, is told of every attempt.
	Observer Observer
	// Clock stamps notifications and attempts and times retries and polls
	// (default: real time); timeouts are real time.
	Clock clock.WithTickerAndDelayedExecution
	// Log receives delivery failures (default: slog.Default()).
	Log *slog.Logger
}

// Notifier creates and delivers webhook notifications. Call Run once per
// process; the event methods may be called from anywhere.
type Notifier struct {
	cfg       Config
	store     Store
	resources ResourceURLs
	client    *http.Client
	observer  Observer
	clock     clock.WithTickerAndDelayedExecution
	log       *slog.Logger

	kick chan struct{}
	wg   sync.WaitGroup
}

// New builds a Notifier.
func New(cfg Config, deps Deps) (*Notifier, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("webhook: Store is required")
	}
	n := &Notifier{cfg: cfg, store: deps.Store, resources: deps.Resources,
		client:   &http.Client{Transport: deps.Allowed.Transport()},
		observer: deps.Observer, clock: deps.Clock, log: deps.Log, kick: make(chan struct{}, 1)}
	if n.clock == nil {
		n.clock = clock.RealClock{}
	}
	if n.log == nil {
		n.log = slog.Default()
	}
	if n.resources == nil {
		n.resources = func(context.Context, *store.Crawl) ([]string, error) { return nil, nil }
	}
	return n, nil
}

// Kick makes Run look for due deliveries now (after an event or a manual
// retry) instead of at its next poll.
func (n *Notifier) Kick() {
	select {
	case n.kick <- struct{}{}:
	default: // a look is already due
	}
}

// now is the time as the store keeps it (milliseconds).
func (n *Notifier) now() time.Time { return n.clock.Now().UTC().Truncate(time.Millisecond) }
