package crawlersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The JSON the crawler writes, field for field and in the same key order as
// JavaScript's JSON.stringify gives for the objects the crawler builds.

// queueEntry is a member of <id>:q (and the value of <id>:p, which adds
// "started" and possibly "retry" inside Redis).
type queueEntry struct {
	Added     string `json:"added"`
	URL       string `json:"url"`
	SeedID    int    `json:"seedId"`
	Depth     int    `json:"depth"`
	ExtraHops int    `json:"extraHops,omitempty"`
}

// logLine is one line of the crawler's JSON log, on stdout and (for errors)
// in <id>:e.
type logLine struct {
	Timestamp string         `json:"timestamp"`
	LogLevel  string         `json:"logLevel"`
	Context   string         `json:"context"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
}

// doneMessage is the crawls-done notification for one uploaded WACZ. User
// is a pointer because the crawler leaves the key out when STORE_USER is
// unset (JSON.stringify drops undefined) but keeps an empty string.
type doneMessage struct {
	ID        string  `json:"id"`
	User      *string `json:"user,omitempty"`
	Filename  string  `json:"filename"`
	Hash      string  `json:"hash"`
	Size      int64   `json:"size"`
	Completed bool    `json:"completed"`
}

// marshalJSON encodes like JSON.stringify: no HTML escaping of <, > and &
// (seed URLs carry & in their query) and no trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// isoTime formats like Date.prototype.toISOString: UTC, milliseconds, Z.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
