package operator

import (
	"bytes"
	"sync"
)

// SyncBuffer is a goroutine-safe log sink. It is exported from this test
// file so the package's own tests and its operator_test tests share one.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
