package api

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A JSON answer larger than net/http's chunking threshold still carries
// its Content-Length (replay.json with many signed links, for one).
func TestJSONAnswersCarryTheirLength(t *testing.T) {
	e := echo.New()
	e.JSONSerializer = sizedJSON{}
	big := strings.Repeat("x", 64<<10)
	e.GET("/", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"path": big}) })
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, _ := strconv.Atoi(resp.Header.Get("Content-Length"))
	if resp.ContentLength <= 64<<10 || n != int(resp.ContentLength) || len(resp.TransferEncoding) > 0 {
		t.Fatalf("Content-Length %q, length %d, transfer encoding %v", resp.Header.Get("Content-Length"), resp.ContentLength, resp.TransferEncoding)
	}
}
