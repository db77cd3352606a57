package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/trawlerhq/trawler/s3"
)

// Object storage failures are mapped in one place: an outage is a 503
// wherever it happens, a failed upload or multi-file download keeps its
// operation's detail, and no cause reaches the detail.
func TestStorageErrorsMapOnce(t *testing.T) {
	const cause = "dial tcp 10.0.0.7:9000: connection refused"
	down := fmt.Errorf("putting object: %s: %w", cause, s3.ErrUnavailable)
	other := errors.New(cause)
	for _, tt := range []struct {
		name   string
		err    error
		status int
		detail string
	}{
		{"OutageOfAFile", down, http.StatusServiceUnavailable, "storage_unavailable"},
		{"OutageOfAnUpload", storageError("upload_failed", down), http.StatusServiceUnavailable, "upload_failed"},
		{"OtherUploadFailure", storageError("upload_failed", other), http.StatusInternalServerError, "upload_failed"},
		{"OtherDownloadFailure", storageError("download_failed", other), http.StatusInternalServerError, "download_failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status, detail := statusOf(tt.err); status != tt.status || detail != tt.detail {
				t.Fatalf("statusOf(%v) = %d %v, want %d %s", tt.err, status, detail, tt.status, tt.detail)
			}
		})
	}
}
