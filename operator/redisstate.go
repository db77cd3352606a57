package operator

import (
	"maps"
	"slices"
	"time"
)

// redisState is what the per-crawl poller last learned from a crawl's
// Redis, after recording files and errors in MongoDB. decide reads it; it
// never talks to Redis itself.
type redisState struct {
	// Reachable is false when the last poll failed; Since is then when the
	// failures began.
	Reachable bool
	Since     time.Time

	// Statuses maps crawler instance (pod name) to its :status value.
	Statuses map[string]string
	// StopOne holds the instances whose :stopone field is set.
	StopOne map[string]bool

	PagesDone  int64
	PagesFound int64
	Size       int64

	// PendingFiles counts crawls-done messages not yet recorded in MongoDB
	// (MongoDB down, or a message that cannot be parsed yet).
	PendingFiles int
	// FilesAdded and FilesAddedSize are the crawl's recorded WACZ totals.
	FilesAdded     int64
	FilesAddedSize int64
}

// equal reports whether two states are the same.
func (s *redisState) equal(o *redisState) bool {
	return s.decisionChange(o) == "" && (s == nil || (s.PagesDone == o.PagesDone && s.PagesFound == o.PagesFound && s.Size == o.Size))
}

// decisionChange names what differs between two states that may lead to
// other decisions, "" when they differ at most in progress (pages and
// size), which the poller then reports within the write budget. The name
// labels the wake it causes (trawler_operator_crawljob_wakes_total).
func (s *redisState) decisionChange(o *redisState) string {
	switch {
	case s == nil || o == nil:
		if s == o {
			return ""
		}
		return "redis-first"
	case s.Reachable != o.Reachable || (!s.Reachable && !s.Since.Equal(o.Since)):
		return "redis-reachable"
	case s.PendingFiles != o.PendingFiles || s.FilesAdded != o.FilesAdded || s.FilesAddedSize != o.FilesAddedSize:
		return "redis-files"
	case !maps.Equal(s.Statuses, o.Statuses):
		return "redis-statuses"
	case !maps.Equal(s.StopOne, o.StopOne):
		return "redis-stopone"
	}
	return ""
}

// redisControl is what the operator wants asserted in a crawl's Redis. The
// poller writes it on every poll, so a crawler restarted in between, or a
// Redis restarted without its data, still sees it.
type redisControl struct {
	// Stopping sets <id>:stopping (and the legacy crawl-stop) to "1".
	Stopping bool
	// Paused sets <id>:paused to "1"; Unpause deletes it.
	Paused, Unpause bool
	// StopOne maps instance name to whether its :stopone field should be
	// set; instances not in the map are left alone.
	StopOne map[string]bool
	// Cleanup lists scaled-down instances whose :stopone and :status fields
	// are removed, so a later scale-up starts them afresh.
	Cleanup []string
	// Forget lists instances whose :status field is deleted if it still
	// says interrupted: a paused crawl's crawlers report afresh when they
	// start again, so a pause asked before they do waits for them.
	Forget []string
	// Canceled sets <id>:canceled to "1": 1.x crawlers then exit at once
	// without uploading (a fast cancel).
	Canceled bool
	// Exits are the operator's lines about unexpected crawler exits (1.x),
	// each pushed to <id>:e once.
	Exits []exitLine
}

func (c redisControl) equal(o redisControl) bool {
	return c.Stopping == o.Stopping && c.Canceled == o.Canceled && c.Paused == o.Paused && c.Unpause == o.Unpause &&
		maps.Equal(c.StopOne, o.StopOne) && slices.Equal(c.Cleanup, o.Cleanup) &&
		slices.Equal(c.Forget, o.Forget) && slices.Equal(c.Exits, o.Exits)
}
