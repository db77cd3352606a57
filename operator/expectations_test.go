package operator

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestExpectations(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const job, pod, pvc = "ns/crawl-a", "pod/crawl-a-0", "pvc/crawl-a-0"
	for _, tc := range []struct {
		name   string
		steps  func(e *expectations)
		at     time.Duration
		create map[string]bool      // awaitsCreate by child
		delete map[string]types.UID // awaitsDelete true for child with this UID
		none   map[string]types.UID // awaitsDelete false for child with this UID
	}{
		{name: "nothing expected", create: map[string]bool{pod: false}},
		{name: "a create the cache has not shown", steps: func(e *expectations) { e.created(job, pod, t0) },
			create: map[string]bool{pod: true, pvc: false}},
		{name: "a create the cache shows", steps: func(e *expectations) {
			e.created(job, pod, t0)
			e.observed(job, map[string]types.UID{pod: "u1"})
		}, create: map[string]bool{pod: false}},
		{name: "a pvc of the same name does not meet a pod's create", steps: func(e *expectations) {
			e.created(job, pod, t0)
			e.observed(job, map[string]types.UID{pvc: "u1"})
		}, create: map[string]bool{pod: true}},
		{name: "a create expires", steps: func(e *expectations) { e.created(job, pod, t0) },
			at: expectationTTL + time.Second, create: map[string]bool{pod: false}},
		{name: "a delete the cache has not shown", steps: func(e *expectations) {
			e.deleted(job, pod, "u1", t0)
			e.observed(job, map[string]types.UID{pod: "u1"})
		}, delete: map[string]types.UID{pod: "u1"}, none: map[string]types.UID{pod: "u2"}, create: map[string]bool{pod: false}},
		{name: "a delete the cache shows: gone", steps: func(e *expectations) {
			e.deleted(job, pod, "u1", t0)
			e.observed(job, map[string]types.UID{})
		}, none: map[string]types.UID{pod: "u1"}},
		{name: "a delete the cache shows: replaced", steps: func(e *expectations) {
			e.deleted(job, pod, "u1", t0)
			e.observed(job, map[string]types.UID{pod: "u2"})
		}, none: map[string]types.UID{pod: "u1", pvc: "u1"}},
		{name: "a forgotten job", steps: func(e *expectations) {
			e.created(job, pod, t0)
			e.deleted(job, pvc, "u1", t0)
			e.forget(job)
		}, create: map[string]bool{pod: false}, none: map[string]types.UID{pvc: "u1"}},
		{name: "other jobs are apart", steps: func(e *expectations) { e.created("ns/crawl-b", pod, t0) },
			create: map[string]bool{pod: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExpectations()
			if tc.steps != nil {
				tc.steps(e)
			}
			now := t0.Add(tc.at)
			for child, want := range tc.create {
				if got := e.awaitsCreate(job, child, now); got != want {
					t.Errorf("awaitsCreate(%s) = %v, want %v", child, got, want)
				}
			}
			for child, uid := range tc.delete {
				if !e.awaitsDelete(job, child, uid, now) {
					t.Errorf("awaitsDelete(%s, %s) = false", child, uid)
				}
			}
			for child, uid := range tc.none {
				if e.awaitsDelete(job, child, uid, now) {
					t.Errorf("awaitsDelete(%s, %s) = true", child, uid)
				}
			}
		})
	}
}
