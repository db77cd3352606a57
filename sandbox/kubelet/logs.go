package kubelet

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
)

// logKey names one container's log.
type logKey struct{ namespace, pod, container string }

// containerLog is a container's log: the last max bytes in memory for
// tests, and the full log in a file under the kubelet's folder for people.
// One log spans every restart of the container in one pod (same UID). The
// file is opened at the first write, so a container that logs nothing
// holds no file open: a scale test's thousands of silent stub pods would
// otherwise use up the process's file descriptors.
type containerLog struct {
	mu   sync.Mutex
	key  logKey
	uid  string
	max  int
	buf  []byte
	path string // the file to open at the first write ("" for none)
	file *os.File
	// warn reports a file that cannot be opened.
	warn   func(err error)
	closed bool
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
	if l.file == nil && l.path != "" && !l.closed {
		l.open()
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

// open creates the log file and its folder; a failure leaves the log in
// memory only. The caller holds l.mu.
func (l *containerLog) open() {
	path := l.path
	l.path = ""
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		l.file, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	if err != nil && l.warn != nil {
		l.warn(err)
	}
}

func (l *containerLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}
