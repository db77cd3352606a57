package operator

import (
	"testing"
	"time"
)

func TestRedisStateDecisionChange(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	base := func() *redisState {
		return &redisState{Reachable: true, Statuses: map[string]string{"crawl-a-0": "running"},
			StopOne: map[string]bool{}, PagesDone: 3, PagesFound: 10, Size: 100, FilesAdded: 1, FilesAddedSize: 50}
	}
	with := func(f func(*redisState)) *redisState { s := base(); f(s); return s }
	tests := []struct {
		name      string
		prev, cur *redisState
		want      string
		equal     bool
	}{
		{"same", base(), base(), "", true},
		{"both unknown", nil, nil, "", true},
		{"first poll", nil, base(), "redis-first", false},
		{"progress only", base(), with(func(s *redisState) { s.PagesDone, s.PagesFound, s.Size = 4, 12, 200 }), "", false},
		{"became unreachable", base(), with(func(s *redisState) { s.Reachable, s.Since = false, t0 }), "redis-reachable", false},
		{"unreachable since another time",
			with(func(s *redisState) { s.Reachable, s.Since = false, t0 }),
			with(func(s *redisState) { s.Reachable, s.Since = false, t0.Add(time.Second) }), "redis-reachable", false},
		{"file recorded", base(), with(func(s *redisState) { s.FilesAdded, s.FilesAddedSize = 2, 90 }), "redis-files", false},
		{"file pending", base(), with(func(s *redisState) { s.PendingFiles = 1 }), "redis-files", false},
		{"instance status", base(), with(func(s *redisState) { s.Statuses["crawl-a-0"] = "done" }), "redis-statuses", false},
		{"stop one", base(), with(func(s *redisState) { s.StopOne["crawl-a-1"] = true }), "redis-stopone", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cur.decisionChange(tt.prev); got != tt.want {
				t.Errorf("decisionChange = %q, want %q", got, tt.want)
			}
			if got := tt.cur.equal(tt.prev); got != tt.equal {
				t.Errorf("equal = %v, want %v", got, tt.equal)
			}
		})
	}
}
