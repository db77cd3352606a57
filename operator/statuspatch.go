package operator

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// statusPatch is the JSON merge patch (RFC 7386) of the status
// subresource that turns the status last written (old) into cur: only
// the fields that changed, null for those gone. A progress write is then
// a few numbers instead of the whole object, and the API server and every
// watcher handle less.
//
// With a resourceVersion the patch is conditional, as an update is: the
// API server refuses it with a conflict when the CrawlJob changed since
// that version, so a state change decided on a stale copy is decided
// again. Progress goes without one: it names only progress fields, which
// nothing else writes, and must not be refused because the user scaled
// or stopped the crawl meanwhile.
func statusPatch(old, cur trawlerv1.CrawlJobStatus, resourceVersion string) ([]byte, error) {
	type meta struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	type object struct {
		Metadata *meta                    `json:"metadata,omitempty"`
		Status   trawlerv1.CrawlJobStatus `json:"status"`
	}
	from, err := json.Marshal(object{Status: old})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	to := object{Status: cur}
	if resourceVersion != "" {
		to.Metadata = &meta{ResourceVersion: resourceVersion}
	}
	into, err := json.Marshal(to)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	patch, err := jsonpatch.CreateMergePatch(from, into)
	if err != nil {
		return nil, fmt.Errorf("building status patch: %w", err)
	}
	return patch, nil
}
