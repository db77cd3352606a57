package s3

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/minio/minio-go/v7"
)

// Error kinds callers branch on with errors.Is; ErrInvalidKey is in
// keys.go.
var (
	// ErrNotFound: no object (or bucket) of that name.
	ErrNotFound = errors.New("no such object")
	// ErrUnavailable: the server could not be reached, timed out or
	// answered with a server error. Retrying later may succeed.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrUnknownStorage: no storage of that name is configured.
	ErrUnknownStorage = errors.New("unknown storage")
)

// classify returns the kind of a client error, or nil for other errors
// (refused credentials, bad requests, ...).
func classify(err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode != 0 {
		switch {
		case resp.Code == "NoSuchKey" || resp.Code == "NoSuchBucket" || resp.StatusCode == http.StatusNotFound:
			return ErrNotFound
		case resp.StatusCode >= 500:
			return ErrUnavailable
		}
		return nil
	}
	var uerr *url.Error
	var nerr net.Error
	if errors.As(err, &uerr) || errors.As(err, &nerr) || errors.Is(err, context.DeadlineExceeded) {
		return ErrUnavailable
	}
	return nil
}
