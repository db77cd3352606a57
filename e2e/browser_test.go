package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// tab is one browser tab of the package's Chromium, watched for console
// errors, uncaught exceptions and failed requests: any of them fails the
// test when it ends.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	// urls remembers request URLs by id, to name a failed request.
	urls map[network.RequestID]string
	// tolerated are URL parts whose failures are not the dashboard's.
	tolerated []string
}

// tolerate ignores failed requests and error statuses of URLs holding
// part, which a test explains.
func (tb *tab) tolerate(part string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.tolerated = append(tb.tolerated, part)
}

// isTolerated reports whether a URL's failure is ignored.
func (tb *tab) isTolerated(url string) bool {
	for _, part := range tb.tolerated {
		if strings.Contains(url, part) {
			return true
		}
	}
	return false
}

// newTab opens a tab for the test; it closes when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	needStack(t)
	ctx, cancel := chromedp.NewContext(stack.browser)
	tb := &tab{t: t, ctx: ctx, urls: map[network.RequestID]string{}}
	// The first call opens the tab, so it runs without a deadline (one
	// would end the browser with it).
	err := chromedp.Listen(ctx, tb.watch)
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, log.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	}
	if err != nil {
		cancel()
		t.Fatalf("starting the browser: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("browser: %s", p)
		}
	})
	return tb
}

// watch records what the dashboard must never cause.
func (tb *tab) watch(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		tb.urls[e.RequestID] = e.Request.URL
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			tb.problems = append(tb.problems, "console."+string(e.Type)+": "+argsText(e.Args))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		if d.Exception != nil {
			tb.problems = append(tb.problems, "uncaught exception: "+d.Exception.Description)
		} else {
			tb.problems = append(tb.problems, "uncaught exception: "+d.Text)
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError && !tb.isTolerated(e.Entry.URL) {
			tb.problems = append(tb.problems, fmt.Sprintf("console (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventLoadingFailed:
		// A stream the page closed itself is canceled, not failed.
		if !e.Canceled && !tb.isTolerated(tb.urls[e.RequestID]) {
			tb.problems = append(tb.problems, fmt.Sprintf("request failed: %s: %s", tb.urls[e.RequestID], e.ErrorText))
		}
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 && !tb.isTolerated(e.Response.URL) {
			tb.problems = append(tb.problems, fmt.Sprintf("HTTP %d for %s", e.Response.Status, e.Response.URL))
		}
	}
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if len(a.Value) > 0 {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// do runs actions with a deadline, failing the test on error.
func (tb *tab) do(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) into T.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it is true.
func (tb *tab) waitJS(what string, timeout time.Duration, cond string) {
	tb.t.Helper()
	tb.do("waiting for "+what, timeout+time.Second, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
}

// nextFrames waits until the page drew twice, so that what it just
// changed is on screen.
func (tb *tab) nextFrames() {
	tb.t.Helper()
	eval[bool](tb, `new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))))`)
}

// screenshot saves the page as <artifacts>/<test>-<name>.png.
func (tb *tab) screenshot(name string) string {
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	file := filepath.Join(stack.artifacts, strings.ReplaceAll(tb.t.Name(), "/", "-")+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	tb.t.Logf("screenshot: %s", file)
	return file
}
