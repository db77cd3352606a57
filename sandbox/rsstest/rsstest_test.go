package rsstest

import (
	"runtime/debug"
	"testing"
)

// The peak after a reset is at least the resident set, and grows with
// memory the process touches.
func TestPeakFollowsTouchedMemory(t *testing.T) {
	debug.FreeOSMemory() // what an earlier run touched leaves the resident set
	ResetPeak(t)
	rss := RSS(t)
	before := Peak(t) // read after: the peak since the reset covers rss
	if rss <= 0 || before < rss {
		t.Fatalf("RSS %d, then peak %d", rss, before)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if after := Peak(t); after < before+32<<20 {
		t.Fatalf("peak %d after touching 64 MiB, %d before", after, before)
	}
	_ = buf[len(buf)-1]
}
