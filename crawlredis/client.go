package crawlredis

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClientOptions are the options the API and the operator both start from
// for a crawl's Redis at url: every call bounded by timeout and never
// retried, so a slow or absent Redis fails fast and the caller decides
// when to try again. A crawl's Redis is a plain redis-server: there is no
// client name to set and no maintenance notifications to ask for (each a
// wasted round trip, and the handlers cost ~5 KiB per client). A nil dial
// keeps go-redis's own dialer.
func ClientOptions(url string, timeout time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*redis.Options, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parsing redis url: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = -1
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if dial != nil {
		opts.Dialer = dial
	}
	return opts, nil
}
