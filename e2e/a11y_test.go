package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// auditJS checks the page as it is shown for what a keyboard or screen
// reader user and a reader with low vision need: a language, one h1,
// every form control labelled, every button and link named, images with
// a text alternative, and text contrast of at least 4.5:1 (3:1 for large
// text) against the background it is drawn on (WCAG 2 AA).
const auditJS = `(() => {
  const problems = [];
  const visible = (el) => {
    const s = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    return s.visibility !== "hidden" && s.display !== "none" && r.width > 0 && r.height > 0 &&
      !el.closest("[hidden], .visually-hidden, dialog:not([open])");
  };
  const name = (el) => (el.getAttribute("aria-label") || "").trim() ||
    (el.getAttribute("aria-labelledby") || "").split(" ").map((id) => (document.getElementById(id) || {}).textContent || "").join(" ").trim() ||
    (el.textContent || "").trim();
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : "") +
    " \"" + (el.textContent || "").trim().slice(0, 40) + "\"";
  if (!document.documentElement.lang) problems.push("the page has no lang");
  const h1s = [...document.querySelectorAll("h1")];
  if (h1s.length !== 1) problems.push(h1s.length + " h1 elements");
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    if (!(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby")) {
      problems.push("unlabelled " + describe(el) + " name=" + el.name);
    }
  }
  for (const el of document.querySelectorAll("button, a[href], [role=button]")) {
    if (visible(el) && !name(el)) problems.push("no accessible name: " + describe(el));
  }
  for (const el of document.querySelectorAll("img, svg[role=img]")) {
    if (!el.getAttribute("alt") && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby")) {
      problems.push("image without a text alternative: " + describe(el));
    }
  }
  const rgba = (s) => {
    const m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const blend = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = blend(c, bg);
    return bg;
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const checked = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || checked.has(el) || !visible(el)) continue;
    checked.add(el);
    const s = getComputedStyle(el);
    const fg = blend(rgba(s.color), background(el));
    const bg = background(el);
    const [a, b] = [lum(fg), lum(bg)];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(s.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(s.fontWeight) >= 700);
    const need = large ? 3 : 4.5;
    if (ratio < need) problems.push("contrast " + ratio.toFixed(2) + " < " + need + ": " + describe(el));
  }
  return problems;
})()`

// audit runs auditJS on the page as it is and fails the test with what
// it finds.
func (tb *tab) audit(view string) {
	tb.t.Helper()
	for _, p := range eval[[]string](tb, auditJS) {
		tb.t.Errorf("accessibility of the %s: %s", view, p)
	}
}

// onPhone shows the page at a phone's size (390x844 CSS pixels, touch),
// checks that it does not scroll sideways, saves a screenshot and goes
// back to the desktop size.
func (tb *tab) onPhone(view string) {
	tb.t.Helper()
	tb.do("phone size", 10*time.Second,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	defer tb.do("desktop size", 10*time.Second, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{})
		return err
	}))
	overflow := eval[[]string](tb, `(() => {
	  const w = document.documentElement.clientWidth;
	  if (document.documentElement.scrollWidth <= w) return [];
	  return [...document.querySelectorAll("body *")].filter((el) => {
	    if (el.closest(".table-wrap")) return false; // tables scroll inside their box
	    const r = el.getBoundingClientRect();
	    return r.right > w + 1 && r.width > 0;
	  }).slice(0, 5).map((el) => el.tagName + "#" + el.id + "." + el.className);
	})()`)
	if len(overflow) > 0 {
		tb.t.Errorf("the %s scrolls sideways on a phone; too wide: %s", view, strings.Join(overflow, ", "))
	}
	tb.nextFrames()
	tb.screenshot("phone-" + strings.ReplaceAll(view, " ", "-"))
}

// TestAuditFindsProblems: the audit fails a page that breaks its rules,
// so its silence on the dashboard means something.
func TestAuditFindsProblems(t *testing.T) {
	tb := newTab(t)
	page := `<!doctype html><html><body><h1>A</h1><h1>B</h1>
<input name="q"><button></button>
<p style="color:#999;background:#fff">pale text</p>
<p style="color:#222;background:#fff">dark text</p>
<svg role="img"></svg></body></html>`
	tb.do("loading a bad page", 10*time.Second, chromedp.Navigate("data:text/html,"+url.PathEscape(page)))
	got := eval[[]string](tb, auditJS)
	for _, want := range []string{"no lang", "2 h1 elements", "unlabelled input", "no accessible name: button",
		"contrast 2.85 < 4.5: p", "image without a text alternative: svg"} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("the audit did not report %q; it reported %q", want, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d problems, want 6: %q", len(got), got)
	}
}
