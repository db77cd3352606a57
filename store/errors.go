package store

import (
	"errors"
	"fmt"
)

// The error vocabulary of the store. Every error a store method returns for
// a reason the caller can act on wraps one of these, so callers (and the
// API's single error-to-HTTP mapping) test them with errors.Is.
var (
	// ErrNotFound: the document does not exist (or not in that org).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique key is taken or a compare-and-set lost.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input breaks a rule of the domain.
	ErrInvalid = errors.New("invalid")
)

// Error carries a user-facing detail string (an upstream-compatible detail
// such as "crawl_not_found") next to one of the sentinel kinds above.
type Error struct {
	Kind   error
	Detail string
}

// Error formats the kind and the detail.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Kind, e.Detail) }

// Unwrap lets errors.Is match the kind.
func (e *Error) Unwrap() error { return e.Kind }

// NotFound returns an ErrNotFound with a detail for users.
func NotFound(detail string) error { return &Error{Kind: ErrNotFound, Detail: detail} }

// Conflict returns an ErrConflict with a detail for users.
func Conflict(detail string) error { return &Error{Kind: ErrConflict, Detail: detail} }

// Invalid returns an ErrInvalid with a detail for users.
func Invalid(detail string) error { return &Error{Kind: ErrInvalid, Detail: detail} }

// Errors callers branch on beyond their kind. Each is an *Error, so
// errors.Is matches it and its kind, and Detail gives its detail; store
// methods return these values, never a fresh error with the same detail,
// which errors.Is would not match.
var (
	// ErrCrawlExists: a crawl or upload of that id exists.
	ErrCrawlExists = Conflict("crawl_exists")
	// ErrCrawlAlreadyRunning: the workflow has a crawl that has not ended.
	ErrCrawlAlreadyRunning = Conflict("crawl_already_running")
	// ErrNoSuchOrgUser: the user is not a member of the org.
	ErrNoSuchOrgUser = NotFound("no_such_org_user")
	// ErrLastOwner: the change would leave the org without an owner.
	ErrLastOwner = Conflict("last_owner")
)

// Detail returns the user-facing detail of err, or "" if it has none.
func Detail(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return ""
}
