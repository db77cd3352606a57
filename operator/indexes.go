package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// labelIndex is a cache index of objects by namespace and the value of one
// label. A sync reads one crawl's children (and a queued crawl its org's
// crawls) through it: a label selector List scans every object of the
// namespace, which with a thousand crawls made each sync cost thousands of
// label matches, and every resync a million.
type labelIndex[T any] struct {
	indexer cache.Indexer
	label   string
}

// addLabelIndex adds the index to an informer that has not started.
func addLabelIndex[T any](inf cache.SharedIndexInformer, label string) (labelIndex[T], error) {
	err := inf.AddIndexers(cache.Indexers{label: func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		v, ok := m.GetLabels()[label]
		if !ok {
			return nil, nil
		}
		return []string{m.GetNamespace() + "/" + v}, nil
	}})
	if err != nil {
		return labelIndex[T]{}, fmt.Errorf("adding the %s index: %w", label, err)
	}
	return labelIndex[T]{indexer: inf.GetIndexer(), label: label}, nil
}

// list returns the cached objects in ns whose label has value. They are
// the cache's own: callers must not change them.
func (x labelIndex[T]) list(ns, value string) ([]T, error) {
	objs, err := x.indexer.ByIndex(x.label, ns+"/"+value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
