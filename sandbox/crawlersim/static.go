package crawlersim

import (
	"embed"
	"net/url"
)

// Every synthetic page embeds a stylesheet and an image from its own
// origin, so that replaying a page also resolves embedded resources, as
// with any real site. Like the crawler's recorder, which skips a URL it
// has already written, an instance captures each of them once per
// collection (so once per WACZ), with the first page of the origin that
// it records.

//go:embed static
var staticFiles embed.FS

// staticPrefix is where an origin's subresources live; no synthetic
// page is under it.
const staticPrefix = "/sim-static/"

// subresource is one file every origin serves under staticPrefix.
type subresource struct {
	name string // file in static/ and under staticPrefix
	mime string
}

// subresources are what pageHTML links to, in its order.
var subresources = []subresource{{"style.css", "text/css"}, {"image.png", "image/png"}}

// captureAt is the subresource fetched by the page at pageURL.
func (r subresource) captureAt(origin, pageURL string) capture {
	body, err := staticFiles.ReadFile("static/" + r.name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return capture{url: origin + staticPrefix + r.name, referer: pageURL, mime: r.mime, body: body}
}

// originOf is scheme://host[:port] of an absolute URL, "" for anything
// else.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
