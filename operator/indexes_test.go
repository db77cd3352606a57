package operator

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
)

func TestLabelIndex(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	idx, err := addLabelIndex[*corev1.Pod](inf, k8s.LabelCrawl)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name, crawl string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if crawl != "" {
			p.Labels = map[string]string{k8s.LabelCrawl: crawl}
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("a", "p1", "c1"), pod("a", "p2", "c1"), pod("a", "p3", "c2"),
		pod("b", "p4", "c1"), pod("a", "p5", "")} {
		if err := inf.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		ns, crawl string
		want      []string
	}{
		{"a", "c1", []string{"p1", "p2"}},
		{"a", "c2", []string{"p3"}},
		{"b", "c1", []string{"p4"}},
		{"b", "c2", []string{}},
	} {
		got, err := idx.list(tt.ns, tt.crawl)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, p := range got {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		if diff := cmp.Diff(tt.want, names); diff != "" {
			t.Errorf("%s/%s (-want +got):\n%s", tt.ns, tt.crawl, diff)
		}
	}
}
