package kubelet

import (
	"bytes"
	"os"
	"sync"
)

// logKey names one container's log.
type logKey struct{ namespace, pod, container string }

// containerLog is a container's log: the last max bytes in memory for
// tests, and the full log in a file under the kubelet's folder for people.
// One log spans every restart of the container in one pod (same UID).
type containerLog struct {
	mu   sync.Mutex
	key  logKey
	uid  string
	max  int
	buf  []byte
	file *os.File
}

func (l *containerLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		cut := over
		// Drop whole lines when possible, so the log never starts mid-line.
		if i := bytes.IndexByte(l.buf[over:], '\n'); i >= 0 && i < len(l.buf)-over-1 {
			cut = over + i + 1
		}
		l.buf = append(l.buf[:0:0], l.buf[cut:]...)
	}
	if l.file != nil {
		// The file is a convenience; a failed write must not fail the program.
		_, _ = l.file.Write(p)
	}
	return len(p), nil
}

func (l *containerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func (l *containerLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}
