package crawlersim

import (
	"fmt"
	"strings"
	"time"
)

// storage is the crawler's upload target. It exists only when
// STORE_ENDPOINT_URL is set: without it there is no upload and no
// crawls-done message.
type storage struct {
	prefix   string  // STORE_ENDPOINT_URL + STORE_PATH, the start of every filename
	template string  // STORE_FILENAME, default @ts-@id.wacz
	crawlID  string  // CRAWL_ID, else the hostname (the webhook ignores --crawlId)
	user     *string // STORE_USER; nil when unset, so the key is left out
	webhook  string  // WEBHOOK_URL; empty means upload without notifying
}

func newStorage(env map[string]string, hostname string) *storage {
	endpoint, ok := env["STORE_ENDPOINT_URL"]
	if !ok || endpoint == "" {
		return nil
	}
	s := &storage{
		prefix:   endpoint + env["STORE_PATH"],
		template: env["STORE_FILENAME"],
		crawlID:  env["CRAWL_ID"],
		webhook:  env["WEBHOOK_URL"],
	}
	if s.template == "" {
		s.template = "@ts-@id.wacz"
	}
	if s.crawlID == "" {
		s.crawlID = hostname
	}
	if u, ok := env["STORE_USER"]; ok {
		s.user = &u
	}
	return s
}

// message builds the crawls-done notification for an uploaded WACZ.
func (s *storage) message(target, hash string, size int64, completed bool) doneMessage {
	return doneMessage{ID: s.crawlID, User: s.user, Filename: s.prefix + target, Hash: hash, Size: size, Completed: completed}
}

// tsDigits is the crawler's @ts: the ISO timestamp with ":", "T", "Z", "."
// and "-" removed, 17 digits.
func tsDigits(t time.Time) string {
	return strings.NewReplacer(":", "", "T", "", "Z", "", ".", "", "-", "").Replace(isoTime(t))
}

// interpolateFilename replaces the first occurrence of each token, in the
// crawler's order: @ts, @hostname, @hostsuffix (last 14 characters of the
// hostname), @id.
func interpolateFilename(tmpl string, now time.Time, hostname, crawlID string) string {
	suffix := hostname
	if len(suffix) > 14 {
		suffix = suffix[len(suffix)-14:]
	}
	tmpl = strings.Replace(tmpl, "@ts", tsDigits(now), 1)
	tmpl = strings.Replace(tmpl, "@hostname", hostname, 1)
	tmpl = strings.Replace(tmpl, "@hostsuffix", suffix, 1)
	return strings.Replace(tmpl, "@id", crawlID, 1)
}

// splitRedisWebhook splits redis://host:port/db/key into the Redis URL of
// the database and the list key. Splitting on "/" must give exactly five
// parts, otherwise the crawler gives up (exit 17).
func splitRedisWebhook(u string) (dbURL, key string, err error) {
	parts := strings.Split(u, "/")
	if len(parts) != 5 {
		return "", "", fmt.Errorf("redis webhook url must be in format: redis://<host>:<port>/<db>/<key>, got %q", u)
	}
	return strings.Join(parts[:4], "/"), parts[4], nil
}
