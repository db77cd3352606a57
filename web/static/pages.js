// A crawl's pages: a table of the pages the crawl archived, searchable by
// title words or from a URL on (the API's `search`), a page at a time.

import { api } from "./api.js";
import { h, fmtDate, number, errorText } from "./ui.js";

const pageSize = 50;

export function pagesSection(ctx, crawlId) {
  const base = `/orgs/${ctx.orgId}/crawls/${encodeURIComponent(crawlId)}/pages`;
  const input = h("input", { type: "search", id: "pages-search", name: "search", "aria-describedby": "pages-hint" });
  const body = h("tbody");
  const status = h("p", { id: "pages-status", role: "status", class: "muted" }, "Loading the pages…");
  const more = h("button", { type: "button", id: "pages-more", class: "secondary", hidden: true }, "More pages");
  let page = 1;
  let search = "";

  async function load(reset) {
    if (reset) { page = 1; body.replaceChildren(); }
    const q = new URLSearchParams({ page: String(page), pageSize: String(pageSize) });
    if (search) q.set("search", search);
    try {
      const res = await api(`${base}?${q}`);
      for (const p of res.items) {
        body.append(h("tr", {},
          h("td", {}, h("a", { href: p.url, rel: "noreferrer", target: "_blank" }, p.title || p.url), h("div", { class: "url muted" }, p.url)),
          h("td", {}, String(p.status)),
          h("td", {}, p.isSeed ? "Seed" : `Depth ${p.depth ?? "?"}`),
          h("td", {}, fmtDate(p.ts))));
      }
      const shown = body.children.length;
      status.textContent = res.total === 0 ? (search ? "No page matches." : "No pages yet.")
        : `${number(shown)} of ${number(res.total)} pages`;
      more.hidden = shown >= res.total;
    } catch (e) {
      status.textContent = "The pages could not be loaded: " + errorText(e);
    }
  }

  const form = h("form", {
    class: "row", role: "search", "aria-label": "Search the pages",
    onsubmit: (ev) => { ev.preventDefault(); search = input.value.trim(); load(true); },
  },
  h("label", { for: "pages-search" }, "Search pages"), input,
  h("button", { type: "submit" }, "Search"));
  more.onclick = () => { page++; load(false); };

  const el = h("section", { "aria-labelledby": "pages-title" },
    h("h2", { id: "pages-title" }, "Pages"), form,
    h("p", { id: "pages-hint", class: "muted" }, "Words of a title, or a URL starting with http: or https: to list pages from that URL on."),
    h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Pages" },
      h("table", { id: "pages" },
        h("thead", {}, h("tr", {}, ["Page", "Status", "Seed or depth", "Archived"].map((t) => h("th", { scope: "col" }, t)))),
        body)),
    status, more);
  load(true);
  return { el, reload: () => load(true) };
}
