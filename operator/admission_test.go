package operator

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

func TestValidateSpec(t *testing.T) {
	neg := int32(-1)
	tests := []struct {
		name        string
		change      func(*trawlerv1.CrawlJob)
		configMapOK bool
		want        []string // a part of each problem, in order
	}{
		{"valid", func(*trawlerv1.CrawlJob) {}, true, nil},
		{"scale 0", func(cj *trawlerv1.CrawlJob) { cj.Spec.Scale = 0 }, true, []string{"spec.scale 0 is outside 1..3"}},
		{"scale above the maximum", func(cj *trawlerv1.CrawlJob) { cj.Spec.Scale = 4 }, true, []string{"spec.scale 4 is outside 1..3"}},
		{"missing config map", func(*trawlerv1.CrawlJob) {}, false, []string{k8s.CrawlConfigMapName(testID)}},
		{"negative limits, each named", func(cj *trawlerv1.CrawlJob) {
			cj.Spec.CrawlTimeout, cj.Spec.MaxCrawlSize, cj.Spec.TTLSecondsAfterFinished = -2, -3, &neg
		}, true, []string{"spec.crawlTimeout -2", "spec.maxCrawlSize -3", "spec.ttlSecondsAfterFinished -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateSpec(newJob(1, tt.change), testConfig(), tt.configMapOK)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d %q, want one with %q", i, got[i], w)
				}
			}
		})
	}
	if got := joinProblems([]string{"a", "b"}); got != "a; b" {
		t.Errorf("joinProblems = %q", got)
	}
}

func TestGatedByOrgLimit(t *testing.T) {
	tests := []struct {
		name   string
		state  string
		hasRun bool
		want   bool
	}{
		{"starting", store.StateStarting, false, true},
		{"waiting for the org's limit", store.StateWaitingOrgLimit, false, true},
		{"waiting for capacity: already let in", store.StateWaitingCapacity, false, false},
		{"running", store.StateRunning, false, false},
		{"starting again after it ran (a restart): never sent back to wait", store.StateStarting, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var since *metav1.Time
			if tt.hasRun {
				since = mtime(t0)
			}
			if got := gatedByOrgLimit(tt.state, since); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOrgSlotFree(t *testing.T) {
	job := func(name string, at int, state string) *trawlerv1.CrawlJob {
		cj := newJob(1)
		cj.Name, cj.UID = name, types.UID(name)
		cj.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(at) * time.Second))
		cj.Status.State = state
		return cj
	}
	a := job("crawljob-sched-a", 0, store.StateRunning)
	b := job("crawljob-manual-b", 1, store.StateStarting)
	c := job("crawljob-manual-c", 1, store.StateStarting)
	done := job("crawljob-manual-0", -5, store.StateComplete)
	all := []*trawlerv1.CrawlJob{done, c, b, a}
	tests := []struct {
		name string
		cj   *trawlerv1.CrawlJob
		max  int
		want bool
	}{
		{"unlimited", c, 0, true},
		{"oldest first by creation time, not name", a, 1, true},
		{"second waits at max 1", b, 1, false},
		{"same second: by name", b, 2, true},
		{"same second, later name waits", c, 2, false},
		{"finished crawls do not count", c, 3, true},
		{"a running crawl holds its slot though a newer one sorts first", job("crawljob-manual-a", 1, store.StateStarting), 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := orgSlotFree(tt.cj, all, tt.max); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
