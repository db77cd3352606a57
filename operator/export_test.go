package operator

import (
	"bytes"
	"sync"

	"k8s.io/client-go/rest"
)

// DefaultTestConfig is testConfig for the operator_test tests.
func DefaultTestConfig() Config { return testConfig() }

// RateLimitedRestConfig returns a copy of base with the Kubernetes client
// rate limits main sets by default (operator.kube_qps 200 and
// operator.kube_burst 400), for the clients tests give the operator:
// client-go's defaults (5/10) would make creating a hundred crawls take a
// minute.
func RateLimitedRestConfig(base *rest.Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = 200, 400
	rc.RateLimiter = nil
	return rc
}

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
