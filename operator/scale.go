package operator

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
)

// resolveScale moves the crawl's scale toward the wanted scale: up at
// once, down only after each instance above it has stopped cleanly
// (Succeeded) or never ran, highest index first, so no unuploaded data is
// dropped. It asks Redis to stop the instances above the wanted scale
// and to forget the ones above the scale whose pods are gone.
func (p *plan) resolveScale(id string, o observed, wanted int32) {
	r := o.Redis
	reachable := r != nil && r.Reachable
	if wanted > p.Scale && reachable && r.PagesFound > 0 && int64(wanted) > r.PagesFound {
		// No more instances than pages, but never scale down for it.
		wanted = max(p.Scale, int32(r.PagesFound))
	}
	if wanted >= p.Scale {
		// An instance left with fields from an earlier scale-down would read
		// "done" and exit at once: scale up to it only once it is clean.
		for i := p.Scale; i < wanted && reachable; i++ {
			name := k8s.CrawlerName(id, int(i))
			if _, dirty := r.Statuses[name]; (dirty || r.StopOne[name]) && o.Crawlers[int(i)] == nil {
				wanted = i
			}
		}
		p.Scale = wanted
	} else if reachable {
		newScale := p.Scale
		for i := p.Scale - 1; i >= wanted; i-- {
			name := k8s.CrawlerName(id, int(i))
			pod := o.Crawlers[int(i)]
			status, ran := r.Statuses[name]
			gone := (pod != nil && pod.Status.Phase == corev1.PodSucceeded) || !ran ||
				(pod == nil && status == "done")
			if gone && newScale == i+1 {
				newScale = i
			}
		}
		p.Scale = newScale
	}
	if !reachable {
		return
	}
	p.Control.StopOne = map[string]bool{}
	for i := range int(p.Scale) {
		name := k8s.CrawlerName(id, i)
		if want := int32(i) >= wanted; want || r.StopOne[name] {
			p.Control.StopOne[name] = want
		}
	}
	// Instances above the scale whose pods are gone keep no Redis fields.
	dirty := map[string]bool{}
	for name := range r.Statuses {
		dirty[name] = true
	}
	for name := range r.StopOne {
		dirty[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(dirty)) {
		i, ok := k8s.CrawlerIndex(id, name)
		if ok && int32(i) >= p.Scale && o.Crawlers[i] == nil {
			p.Control.Cleanup = append(p.Control.Cleanup, name)
		}
	}
}

// clampScale bounds the requested scale to 1..max.
func clampScale(scale int32, maxScale int) int32 {
	return min(max(scale, 1), int32(maxScale))
}
