// A crawl's page: live progress from its event stream (state, pages,
// size, elapsed time, instances, a chart of pages over time), the stop,
// cancel, pause, resume and scale controls, and its errors, pages, logs
// and files.

import { api, crawlEvents, downloadURL } from "./api.js";
import {
  h, badge, stateLabel, finalStates, pausedStates, humanSize, humanDuration, apiDate, fmtDate, number,
  announce, confirmAction, errorText,
} from "./ui.js";
import { pagesChart } from "./chart.js";
import { replayLink } from "./replay.js";
import { pagesSection } from "./pages.js";

const errorsEvery = 10000;

export function crawlView(main, ctx, id) {
  const v = new CrawlPage(main, ctx, id);
  v.start();
  return () => v.stop();
}

class CrawlPage {
  constructor(main, ctx, id) {
    Object.assign(this, { main, ctx, id, crawl: null, last: null, points: [], fileCount: -1, timers: [] });
    this.base = `/orgs/${ctx.orgId}/crawls/${encodeURIComponent(id)}`;
  }

  async start() {
    this.main.replaceChildren(h("p", { class: "muted" }, "Loading the crawl…"));
    try {
      this.crawl = await api(this.base);
    } catch (e) {
      this.main.replaceChildren(back(), h("p", { class: "error", role: "alert" },
        e.status === 404 ? "There is no such crawl in this organisation." : errorText(e)));
      return;
    }
    if (this.stopped) return;
    this.render();
    this.update(fromCrawl(this.crawl));
    this.timers.push(setInterval(() => this.tickElapsed(), 1000));
    // Finished crawls have a stream too: it sends their states and their
    // last view of the instances, then ends.
    this.follow();
    if (!finalStates.has(this.crawl.state)) {
      this.loadErrors();
      this.timers.push(setInterval(() => { if (!document.hidden) this.loadErrors(); }, errorsEvery));
    }
  }

  stop() {
    this.stopped = true;
    if (this.events) this.events.close();
    this.timers.forEach(clearInterval);
  }

  // follow opens the event stream; EventSource reconnects by itself after
  // a dropped connection, resuming from the last event it got.
  follow() {
    const es = crawlEvents(this.ctx.orgId, this.id);
    this.events = es;
    es.addEventListener("state", (ev) => this.addState(JSON.parse(ev.data)));
    es.addEventListener("crawl", (ev) => {
      this.connection.textContent = "Live";
      this.update(JSON.parse(ev.data));
    });
    es.addEventListener("end", () => {
      es.close();
      this.connection.textContent = "Finished";
      this.finished();
    });
    es.addEventListener("error", () => {
      if (es.readyState === EventSource.CONNECTING) this.connection.textContent = "Reconnecting…";
    });
  }

  render() {
    const c = this.crawl;
    const dd = (id) => h("dd", { id });
    this.stateBadge = h("span", { id: "crawl-state" });
    this.connection = h("span", { class: "muted", id: "connection" }, "Connecting…");
    this.stats = {
      done: dd("pages-done"), found: dd("pages-found"), failed: dd("pages-failed"),
      size: dd("crawl-size"), elapsed: dd("elapsed"), scale: dd("crawl-scale"),
    };
    this.chart = pagesChart("chart-title");
    this.chartText = h("p", { id: "chart-summary", class: "visually-hidden" });
    this.instances = h("tbody");
    this.history = h("ol", { id: "history", class: "history" });
    this.errors = h("div", { id: "errors" });
    this.logs = h("div", { id: "logs" }, h("p", { class: "muted" }, "The logs are available once the crawl has finished."));
    this.files = h("div", { id: "files" }, h("p", { class: "muted" }, "No files yet."));
    this.controls = this.ctx.role >= 20 ? this.renderControls() : null;
    // Pages, like errors, are for crawlers and up (the API's rule).
    this.pages = this.ctx.role >= 20 ? pagesSection(this.ctx, this.id) : null;
    const stat = (label, el) => h("div", { class: "stat" }, h("dt", {}, label), el);
    this.main.replaceChildren(
      back(),
      h("h1", { id: "crawl-title" }, c.name || c.id),
      h("p", { class: "url" }, c.firstSeed || ""),
      h("section", { class: "card", "aria-labelledby": "progress-title" },
        h("div", { class: "row" },
          h("h2", { id: "progress-title" }, "Progress"), this.stateBadge, this.connection),
        h("dl", { class: "stats" },
          stat("Pages done", this.stats.done), stat("Pages found", this.stats.found),
          stat("Pages failed", this.stats.failed), stat("Size", this.stats.size),
          stat("Elapsed", this.stats.elapsed), stat("Instances", this.stats.scale)),
        h("figure", { class: "chart-box" },
          h("figcaption", { id: "chart-title" }, "Pages over time: done ",
            h("span", { class: "key key-done", "aria-hidden": "true" }), " and found ",
            h("span", { class: "key key-found", "aria-hidden": "true" })),
          this.chart.el, this.chartText),
        this.controls),
      h("section", { "aria-labelledby": "instances-title" },
        h("h2", { id: "instances-title" }, "Instances"),
        h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Instances" },
          h("table", { id: "instances" },
            h("thead", {}, h("tr", {}, ["#", "State", "Restarts", "Archived"].map((t) => h("th", { scope: "col" }, t)))),
            this.instances))),
      h("section", { "aria-labelledby": "history-title" },
        h("h2", { id: "history-title" }, "States"), this.history),
      this.ctx.role >= 20 ? h("section", { "aria-labelledby": "errors-title" },
        h("h2", { id: "errors-title" }, "Errors"), this.errors) : null,
      this.pages ? this.pages.el : null,
      h("section", { "aria-labelledby": "files-title" }, h("h2", { id: "files-title" }, "Files"), this.files),
      h("section", { "aria-labelledby": "logs-title" }, h("h2", { id: "logs-title" }, "Logs"), this.logs));
    this.points = [{ t: apiDate(c.started).getTime(), done: 0, found: 0 }];
  }

  renderControls() {
    const scale = h("select", { id: "scale", name: "scale" });
    for (let i = 1; i <= this.ctx.maxScale; i++) scale.add(new Option(String(i), String(i)));
    this.scaleSelect = scale;
    this.actionMsg = h("p", { role: "status", id: "action-status", class: "muted" });
    const act = (label, id, onclick, cls) => h("button", { type: "button", id, class: cls, onclick }, label);
    // Pause and resume: one of the two shows, by the last request and the
    // state (updatePause).
    this.pauseButton = act("Pause", "pause", () => this.confirmAndPost("pause", "Pause this crawl?",
      "The crawlers finish the pages they are on, save what they crawled and stop; the crawl waits for a resume.",
      "Pause crawl", "Pausing…"), "secondary");
    this.resumeButton = act("Resume", "resume", () => this.confirmAndPost("resume", "Resume this crawl?",
      "New crawlers start and crawl on from the queue.", "Resume crawl", "Resuming…"), "secondary");
    return h("div", { class: "controls", id: "controls" },
      this.pauseButton, this.resumeButton,
      act("Stop", "stop", () => this.confirmAndPost("stop", "Stop this crawl?",
        "The crawlers finish the pages they are on and save what they crawled.", "Stop crawl", "Stopping…")),
      act("Cancel", "cancel", () => this.confirmAndPost("cancel", "Cancel this crawl?",
        "The crawlers stop at once and nothing of this crawl is kept.", "Cancel crawl", "Canceling…"), "danger"),
      h("label", { class: "inline" }, "Instances", scale),
      act("Change scale", "scale-apply", () => this.changeScale(), "secondary"),
      this.actionMsg);
  }

  async confirmAndPost(path, title, text, yes, progress, body) {
    if (!(await confirmAction(title, text, yes))) return;
    this.actionMsg.textContent = progress;
    try {
      await api(`${this.base}/${path}`, { method: "POST", body: body || {} });
      this.actionMsg.textContent = progress === "Stopping…" ? "Stopping: the crawlers finish their pages." : progress;
      if (this.last && (path === "pause" || path === "resume")) {
        this.last.shouldPause = path === "pause";
        this.updatePause(this.last);
      }
    } catch (e) {
      this.actionMsg.textContent = "That did not work: " + errorText(e);
    }
    announce(this.actionMsg.textContent);
  }

  async changeScale() {
    const n = Number(this.scaleSelect.value);
    if (this.last && n === this.last.scale) {
      this.actionMsg.textContent = `The crawl already runs ${n} instance${n === 1 ? "" : "s"}.`;
      return;
    }
    await this.confirmAndPost("scale", `Change to ${n} instance${n === 1 ? "" : "s"}?`,
      n > (this.last ? this.last.scale : 1)
        ? "New crawlers start and take pages from the queue."
        : "The extra crawlers finish their pages, save them and stop.",
      "Change scale", `Scaling to ${n}…`, { scale: n });
  }

  addState(st) {
    if (this.history.querySelector(`[data-seq="${st.seq}"]`)) return;
    this.history.append(h("li", { "data-seq": String(st.seq), "data-state": st.state },
      badge(st.state), " ", h("time", { datetime: st.at + "Z" }, fmtDate(st.at))));
  }

  // update shows one crawl event. What only a running crawl's Redis
  // tells (failed pages, crawler statuses) stays as last seen once the
  // crawl has ended.
  update(ev) {
    const prev = this.last;
    if (prev && ev.pagesFailed === null) ev.pagesFailed = prev.pagesFailed;
    if (prev && prev.instances) {
      // A finished crawl's crawlers have exited: their pods say so, not
      // the status they last had.
      const running = !finalStates.has(ev.state);
      const before = new Map(prev.instances.map((i) => [i.index, i]));
      for (const i of ev.instances || []) {
        const b = before.get(i.index);
        if (!b) continue;
        if (i.status === null && running) i.status = b.status;
        if (!i.size) i.size = b.size;
      }
    }
    this.last = ev;
    this.stateBadge.replaceChildren(badge(ev.state));
    if (prev && prev.state !== ev.state) announce("Crawl state: " + stateLabel(ev.state));
    if (ev.stopping && !finalStates.has(ev.state)) this.stateBadge.append(" ", h("span", { class: "muted" }, "(stopping)"));
    this.updatePause(ev);
    const s = ev.stats || { done: 0, found: 0, size: 0 };
    this.stats.done.textContent = number(s.done);
    this.stats.found.textContent = number(s.found);
    this.stats.failed.textContent = number(ev.pagesFailed);
    this.stats.size.textContent = humanSize(s.size);
    this.stats.scale.textContent = `${ev.instances ? ev.instances.length : 0} of ${ev.scale}`;
    this.tickElapsed();
    if (this.scaleSelect && (!prev || prev.scale !== ev.scale)) this.scaleSelect.value = String(ev.scale);
    if (this.controls) this.controls.hidden = finalStates.has(ev.state);
    this.renderInstances(ev.instances || []);
    this.points.push({ t: Date.now(), done: s.done, found: s.found });
    if (finalStates.has(ev.state) && ev.finished) this.points[this.points.length - 1].t = apiDate(ev.finished).getTime();
    this.chart.update(this.points);
    this.chartText.textContent = `${number(s.done)} of ${number(s.found)} pages found are done.`;
    if (ev.fileCount !== this.fileCount) {
      this.fileCount = ev.fileCount;
      if (ev.fileCount > 0) this.loadFiles();
    }
  }

  // updatePause shows Pause on a crawl that runs or waits, Resume on one
  // paused or pausing, and marks the two states never stored: pausing
  // (a pause asked, the state not paused yet) and resuming.
  updatePause(ev) {
    const paused = pausedStates.has(ev.state);
    const note = ev.shouldPause && !paused ? "(pausing)" : !ev.shouldPause && paused ? "(resuming)" : "";
    const old = this.stateBadge.querySelector(".pause-note");
    if (old) old.remove();
    if (note && !finalStates.has(ev.state)) this.stateBadge.append(h("span", { class: "muted pause-note" }, " " + note));
    if (!this.pauseButton) return;
    const over = finalStates.has(ev.state) || ev.stopping;
    this.pauseButton.hidden = over || ev.shouldPause || paused;
    this.resumeButton.hidden = over || !(ev.shouldPause || paused);
  }

  tickElapsed() {
    if (!this.last) return;
    const start = apiDate(this.last.started);
    const end = this.last.finished ? apiDate(this.last.finished) : new Date();
    this.stats.elapsed.textContent = humanDuration((end - start) / 1000);
  }

  renderInstances(list) {
    if (!list.length) {
      this.instances.replaceChildren(h("tr", {}, h("td", { colspan: "4", class: "muted" }, "No crawler has started yet.")));
      return;
    }
    // What the crawler says it does; before it says anything, its pod's
    // phase as the operator last recorded it.
    const state = (i) => i.status || (i.phase ? "pod " + i.phase.toLowerCase() : "—");
    this.instances.replaceChildren(...list.map((i) => h("tr", { "data-index": String(i.index) },
      h("td", { class: "num" }, String(i.index)),
      h("td", { "data-status": i.status || "" }, state(i)),
      h("td", { class: "num" }, String(i.restarts) + (i.reason && i.reason !== "Completed" ? ` (${i.reason})` : "")),
      h("td", { class: "num" }, i.size ? humanSize(i.size) : "—"))));
  }

  // finished loads what only a finished crawl has.
  async finished() {
    this.timers.forEach(clearInterval);
    this.timers = [];
    if (this.pages) this.pages.reload();
    if (this.last && !this.last.finished) {
      try { this.update(fromCrawl(await api(this.base))); } catch (e) { /* keep what is shown */ }
    }
    this.tickElapsed();
    await Promise.all([this.loadFiles(), this.loadLogs(), this.loadErrors()]);
  }

  async loadFiles() {
    try {
      const r = await api(`${this.base}/replay.json`);
      if (this.stopped) return;
      if (!r.resources.length) {
        this.files.replaceChildren(h("p", { class: "muted" }, "No files yet."));
        return;
      }
      // Replay and the one-file download are for a finished crawl: a
      // running one is still adding files.
      const done = finalStates.has(this.last ? this.last.state : r.state);
      this.files.replaceChildren(
        done ? h("p", { class: "actions" },
          replayLink("crawls", this.id, "Replay this crawl"), " ",
          h("a", { href: downloadURL(this.base + "/download"), id: "download-all", download: "" }, "Download all as one WACZ")) : null,
        h("ul", { class: "files" }, r.resources.map((f) => h("li", {},
          h("a", { href: f.path, download: f.name }, "Download ", h("span", { class: "name" }, f.name)),
          " ", h("span", { class: "muted" }, humanSize(f.size))))));
    } catch (e) {
      this.files.replaceChildren(h("p", { class: "error" }, "Could not list the files: " + errorText(e)));
    }
  }

  async loadErrors() {
    if (this.ctx.role < 20) return;
    try {
      const r = await api(`${this.base}/errors?pageSize=50`);
      if (this.stopped) return;
      this.errors.replaceChildren(r.items.length ? logTable("Errors", r.items) : h("p", { class: "muted" }, "No errors."));
      if (r.total > r.items.length) this.errors.append(h("p", { class: "muted" }, `Showing ${r.items.length} of ${number(r.total)}.`));
    } catch (e) {
      this.errors.replaceChildren(h("p", { class: "muted" }, "The errors cannot be read right now: " + errorText(e)));
    }
  }

  async loadLogs() {
    try {
      const text = await api(`${this.base}/logs`, { text: true });
      if (this.stopped) return;
      const lines = text.split("\n").filter((l) => l.trim()).map((l) => {
        try { return JSON.parse(l); } catch (e) { return { message: l }; }
      });
      this.logs.replaceChildren(lines.length
        ? logTable("Logs", lines.slice(-200))
        : h("p", { class: "muted" }, "No log lines were recorded for this crawl."));
    } catch (e) {
      this.logs.replaceChildren(h("p", { class: "error" }, "Could not read the logs: " + errorText(e)));
    }
  }
}

function back() {
  return h("p", {}, h("a", { href: "#/", class: "back" }, "← All workflows and crawls"));
}

// fromCrawl turns GET /crawls/{id} into the shape of a crawl event.
function fromCrawl(c) {
  return {
    id: c.id, state: c.state, stopping: c.stopping, shouldPause: c.shouldPause, scale: c.scale ?? 1, started: c.started, finished: c.finished,
    stats: c.stats, pagesFailed: null, fileCount: c.fileCount, fileSize: c.fileSize, instances: [],
  };
}

function logTable(caption, lines) {
  return h("div", { class: "table-wrap scroll", tabindex: "0", role: "region", "aria-label": caption },
    h("table", { class: "log" },
      h("thead", {}, h("tr", {}, ["Time", "Level", "Context", "Message"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, lines.map((l) => h("tr", {},
        h("td", {}, l.timestamp ? fmtDate(l.timestamp) : ""),
        h("td", {}, l.logLevel || ""),
        h("td", {}, l.context || ""),
        h("td", { class: "message" }, l.message || "", l.details && Object.keys(l.details).length
          ? h("code", {}, " " + JSON.stringify(l.details)) : null))))));
}
