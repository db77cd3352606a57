// The org's page: a form to create (and run) a workflow, the workflows
// with their last crawl, the crawls, the uploads and the collections
// (these two with their Replay and download links), refreshed while the
// page is open.

import { api, downloadURL } from "./api.js";
import { h, badge, humanSize, fmtDate, number, announce, errorText } from "./ui.js";
import { replayLink } from "./replay.js";

const refreshEvery = 5000;

export function homeView(main, ctx) {
  const canCrawl = ctx.role >= 20;
  const workflows = h("tbody", { id: "workflow-list" });
  const crawls = h("tbody", { id: "crawl-list" });
  const uploads = h("tbody", { id: "upload-list" });
  const collections = h("tbody", { id: "collection-list" });
  const listError = h("p", { class: "error", role: "alert" });
  main.replaceChildren(
    h("h1", { class: "visually-hidden" }, "Workflows and crawls"),
    canCrawl ? newWorkflowForm(ctx) : null,
    h("section", { "aria-labelledby": "workflows-title" },
      h("h2", { id: "workflows-title" }, "Workflows"),
      table("Workflows", ["Name", "First URL", "Last crawl", "Crawls", ""], workflows)),
    h("section", { "aria-labelledby": "crawls-title" },
      h("h2", { id: "crawls-title" }, "Crawls"),
      table("Crawls", ["Crawl", "State", "Pages done / found", "Size", "Started"], crawls)),
    h("section", { "aria-labelledby": "uploads-title" },
      h("h2", { id: "uploads-title" }, "Uploads"),
      table("Uploads", ["Upload", "Size", "Uploaded", ""], uploads)),
    h("section", { "aria-labelledby": "collections-title" },
      h("h2", { id: "collections-title" }, "Collections"),
      table("Collections", ["Collection", "Items", "Size", ""], collections)),
    listError);

  let stopped = false;
  let timer = null;
  async function refresh() {
    if (stopped || !ctx.orgId) return;
    try {
      const [wf, cr, up, co] = await Promise.all([
        api(`/orgs/${ctx.orgId}/crawlconfigs?sortBy=modified&pageSize=50`),
        api(`/orgs/${ctx.orgId}/crawls?sortBy=started&pageSize=50`),
        api(`/orgs/${ctx.orgId}/uploads?sortBy=started&pageSize=50`),
        api(`/orgs/${ctx.orgId}/collections?pageSize=50`),
      ]);
      if (stopped) return;
      workflows.replaceChildren(...(wf.items.length ? wf.items.map((w) => workflowRow(w, ctx)) : [emptyRow(5, "No workflows yet.")]));
      crawls.replaceChildren(...(cr.items.length ? cr.items.map(crawlRow) : [emptyRow(5, "No crawls yet.")]));
      uploads.replaceChildren(...(up.items.length ? up.items.map((u) => uploadRow(u, ctx)) : [emptyRow(4, "No uploads yet.")]));
      collections.replaceChildren(...(co.items.length ? co.items.map((c) => collectionRow(c, ctx)) : [emptyRow(4, "No collections yet.")]));
      listError.textContent = "";
      main.dataset.loaded = "true";
    } catch (e) {
      listError.textContent = "Could not load the lists: " + errorText(e);
    }
  }
  function schedule() {
    timer = setTimeout(async () => {
      if (!document.hidden) await refresh();
      if (!stopped) schedule();
    }, refreshEvery);
  }
  refresh().then(schedule);
  return () => { stopped = true; clearTimeout(timer); };
}

function table(caption, heads, body) {
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h("table", {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
      body));
}

function emptyRow(cols, text) {
  return h("tr", {}, h("td", { colspan: String(cols), class: "muted" }, text));
}

function crawlLink(id, text) {
  return h("a", { href: "#/crawls/" + encodeURIComponent(id) }, text);
}

function workflowRow(w, ctx) {
  const action = h("td");
  if (w.isCrawlRunning && w.lastCrawlId) {
    action.append(crawlLink(w.lastCrawlId, "Watch"));
  } else if (ctx.role >= 20) {
    action.append(h("button", {
      type: "button", class: "secondary", "aria-label": `Run ${w.name || w.firstSeed}`,
      onclick: async (ev) => {
        ev.target.disabled = true;
        try {
          const out = await api(`/orgs/${ctx.orgId}/crawlconfigs/${w.id}/run`, { method: "POST" });
          location.hash = "#/crawls/" + encodeURIComponent(out.started);
        } catch (e) {
          ev.target.disabled = false;
          announce("Could not start the crawl: " + errorText(e));
          alertNear(ev.target, errorText(e));
        }
      },
    }, "Run"));
  }
  return h("tr", {},
    h("td", {}, w.name || "(unnamed)"),
    h("td", { class: "url" }, w.firstSeed || ""),
    h("td", {}, w.lastCrawlState
      ? (w.lastCrawlId ? crawlLink(w.lastCrawlId, badge(w.lastCrawlState)) : badge(w.lastCrawlState))
      : h("span", { class: "muted" }, "never run")),
    h("td", { class: "num" }, number(w.crawlCount)),
    action);
}

function crawlRow(c) {
  const stats = c.stats || { done: 0, found: 0, size: 0 };
  return h("tr", {},
    h("td", {}, crawlLink(c.id, c.name || c.id)),
    h("td", {}, badge(c.state)),
    h("td", { class: "num" }, `${number(stats.done)} / ${number(stats.found)}`),
    h("td", { class: "num" }, humanSize(stats.size)),
    h("td", {}, fmtDate(c.started)));
}

// viewLinks are an item's Replay and download links, for an item with
// files.
function viewLinks(kind, id, name, hasFiles, ctx) {
  if (!hasFiles) return h("td", { class: "muted" }, "no files");
  const path = `/orgs/${ctx.orgId}/${kind}/${encodeURIComponent(id)}/download`;
  return h("td", {}, replayLink(kind, id), " ",
    h("a", { href: downloadURL(path), download: "", "aria-label": `Download ${name}` }, "Download"));
}

function uploadRow(u, ctx) {
  const name = u.name || u.id;
  return h("tr", {},
    h("td", {}, name),
    h("td", { class: "num" }, humanSize(u.fileSize)),
    h("td", {}, fmtDate(u.finished || u.started)),
    viewLinks("uploads", u.id, name, u.fileCount > 0, ctx));
}

function collectionRow(c, ctx) {
  const name = c.name || c.id;
  return h("tr", {},
    h("td", {}, name),
    h("td", { class: "num" }, number(c.crawlCount)),
    h("td", { class: "num" }, humanSize(c.totalSize)),
    viewLinks("collections", c.id, name, c.crawlCount > 0, ctx));
}

function alertNear(el, text) {
  const p = h("p", { class: "error", role: "alert" }, text);
  el.closest("td").append(p);
}

// newWorkflowForm creates a workflow, and runs it at once unless asked
// not to; the crawl's page opens when it runs.
function newWorkflowForm(ctx) {
  const scale = h("select", { name: "scale" });
  for (let i = 1; i <= ctx.maxScale; i++) scale.add(new Option(String(i), String(i)));
  const error = h("p", { class: "error", role: "alert" });
  const form = h("form", { id: "new-workflow", class: "card", "aria-labelledby": "new-title" },
    h("h2", { id: "new-title" }, "New workflow"),
    h("div", { class: "fields" },
      h("label", {}, "Name", h("input", { name: "name", required: true, autocomplete: "off" })),
      h("label", { class: "wide" }, "Start URL",
        h("input", { name: "url", type: "url", required: true, placeholder: "https://example.com/", autocomplete: "url" })),
      h("label", {}, "Scope",
        h("select", { name: "scopeType" },
          ["prefix", "host", "domain", "page", "page-spa", "any"].map((s) => new Option(s, s)))),
      h("label", {}, "Page limit (0 = none)", h("input", { name: "limit", type: "number", min: "0", value: "0", inputmode: "numeric" })),
      h("label", {}, "Crawler instances", scale),
      h("label", { class: "check" }, h("input", { name: "runNow", type: "checkbox", checked: true }), "Run now")),
    h("button", { type: "submit" }, "Create workflow"),
    error);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    const f = new FormData(form);
    const body = {
      name: f.get("name"),
      runNow: f.get("runNow") === "on",
      scale: Number(f.get("scale")),
      config: { seeds: [{ url: f.get("url") }], scopeType: f.get("scopeType"), limit: Number(f.get("limit") || 0) },
    };
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      const out = await api(`/orgs/${ctx.orgId}/crawlconfigs/`, { method: "POST", body });
      if (out.run_now_job) {
        location.hash = "#/crawls/" + encodeURIComponent(out.run_now_job);
        return;
      }
      form.reset();
      announce(out.storageQuotaReached ? "Workflow created; not run: the storage quota is reached." : "Workflow created.");
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (e) {
      error.textContent = errorText(e);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
