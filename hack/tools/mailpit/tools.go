//go:build tools

// Package tools pins Mailpit, the SMTP server with a web UI and an HTTP API
// that the sandbox runs so tests and `make dev` can read the e-mails trawler
// sends. It is built straight from github.com/axllent/mailpit; this file
// only keeps its dependencies in go.mod and go.sum.
package tools

import (
	_ "github.com/axllent/mailpit"
)
