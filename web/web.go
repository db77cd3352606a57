// Package web serves trawler's embedded dashboard: log in, see an org's
// workflows and crawls, create and run a workflow, and follow a crawl
// live (its event stream) with stop, cancel and scale controls, its
// errors, logs and files. It is plain HTML, CSS and JavaScript modules,
// served as they are (no build step), and talks only to the public REST
// API, like any other client. It also serves the entry points of
// ReplayWeb.page, the archive viewer, under /replay/ (replay.go).
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Config is what the dashboard needs to know of the server that the API
// does not tell (its /api/settings object is fixed by upstream).
type Config struct {
	// MaxScale is the largest crawler scale (max_crawl_scale).
	MaxScale int `json:"maxScale"`
	// ReplayBaseURL is where ReplayWeb.page's sw.js and ui.js are loaded
	// from (replay.base_url); empty means DefaultReplayBaseURL.
	ReplayBaseURL string `json:"-"`
}

// Handler serves the dashboard's files, cfg as /config.json, and
// ReplayWeb.page's entry points under ReplayPath (see handleReplay).
func Handler(cfg Config) http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // plain data
	}
	mux := http.NewServeMux()
	mux.Handle("/", noCache(http.FileServerFS(files)))
	mux.HandleFunc("/config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(cfgJSON)
	})
	handleReplay(mux, cfg.ReplayBaseURL)
	return mux
}

// noCache makes browsers revalidate the files: embedded files carry no
// modification time, so without it an upgraded server could be paired
// with an old cached script.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
