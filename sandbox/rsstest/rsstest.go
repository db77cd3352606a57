// Package rsstest measures the test process's memory for benchmarks that
// promise flat memory: the resident set now, and its peak since a reset.
// It reads Linux's /proc/self; elsewhere the benchmark is skipped.
package rsstest

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// RSS is the resident set size now, in bytes.
func RSS(tb testing.TB) int64 { tb.Helper(); return procStatus(tb, "VmRSS") }

// Peak is the largest resident set since ResetPeak (or the start), in
// bytes.
func Peak(tb testing.TB) int64 { tb.Helper(); return procStatus(tb, "VmHWM") }

// ResetPeak starts the peak over from the current resident set (Linux
// 4.0+), so that Peak measures what follows.
func ResetPeak(tb testing.TB) {
	tb.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// Idle collects garbage, returns freed memory to the OS and starts the
// peak over: it returns the resident set a measurement starts from, so
// that Peak minus it is what the measured work added.
func Idle(tb testing.TB) int64 {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	idle := RSS(tb)
	ResetPeak(tb)
	return idle
}

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(tb testing.TB, field string) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}
