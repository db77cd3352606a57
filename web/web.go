// Package web serves trawler's small embedded dashboard: log in, start a
// crawl of a URL, and watch, stop, cancel or rescale crawls. It talks only
// to the public REST API, like any other client.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard's files.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.FileServerFS(files)
}
