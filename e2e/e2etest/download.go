package e2etest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Download GETs a link as curl would (plain HTTP, no credentials) and
// returns its body; a link relative to trawler's origin, such as a
// /data/ download link, is resolved against base.
func Download(t testing.TB, base, link string) []byte {
	t.Helper()
	if strings.HasPrefix(link, "/") {
		link = base + link
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %.200s", link, resp.StatusCode, err, data)
	}
	return data
}
