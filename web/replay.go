package web

import (
	"encoding/json"
	"net/http"
	"strings"
)

// DefaultReplayBaseURL is where ReplayWeb.page is loaded from unless
// configured otherwise: its public site, as upstream's RWP_BASE_URL.
const DefaultReplayBaseURL = "https://replayweb.page/"

// ReplayPath is the replayBase that pages embedding ReplayWeb.page give
// it, as the Browsertrix web app does: its service worker is registered
// as ReplayPath + "sw.js" with that scope, and its frame loads
// ReplayPath + "index.html".
const ReplayPath = "/replay/"

// replayIndex is the page of ReplayWeb.page's frame until its service
// worker takes over (embedded, the worker serves it with serveIndex=1).
const replayIndex = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ReplayWeb.page</title>
<script src="./ui.js"></script>
</head>
<body>
<replay-app-main></replay-app-main>
</body>
</html>
`

// replayBase is base with a trailing "/", DefaultReplayBaseURL if empty.
func replayBase(base string) string {
	if base == "" {
		return DefaultReplayBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base
}

// handleReplay serves ReplayWeb.page's entry points under ReplayPath, its
// code coming from base:
//
//   - sw.js: a service worker that imports base's sw.js, so that the
//     worker itself, and with it its scope, is on trawler's origin;
//   - ui.js: a redirect to base's ui.js;
//   - "" and index.html: a page that runs the app.
func handleReplay(mux *http.ServeMux, base string) {
	base = replayBase(base)
	// A JSON string is a JavaScript string literal, with <, > and &
	// escaped too.
	src, err := json.Marshal(base + "sw.js")
	if err != nil {
		panic(err) // a string
	}
	sw := []byte("importScripts(" + string(src) + ");\n")
	mux.HandleFunc("GET "+ReplayPath+"sw.js", func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		// Revalidated on each update check, so a new base takes effect.
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(sw)
	})
	mux.HandleFunc("GET "+ReplayPath+"ui.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.Redirect(w, r, base+"ui.js", http.StatusFound)
	})
	index := func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write([]byte(replayIndex))
	}
	mux.HandleFunc("GET "+ReplayPath+"{$}", index)
	mux.HandleFunc("GET "+ReplayPath+"index.html", index)
}
