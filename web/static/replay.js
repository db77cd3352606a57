// The Replay view of a finished crawl, an upload or a collection: it
// embeds ReplayWeb.page as the Browsertrix web app does, fed by the
// item's replay.json with the user's token, its service worker scoped to
// this origin's /replay/ (which trawler serves from replay.base_url).
// Routes: #/<kind>/<id>/replay, optionally ?url=<archived page URL>.

import { api, session, downloadURL } from "./api.js";
import { h, errorText } from "./ui.js";

// The kinds of item that replay, with the API path of each and how the
// view names it.
export const replayKinds = {
  crawls: { path: "crawls", noun: "crawl" },
  uploads: { path: "uploads", noun: "upload" },
  collections: { path: "collections", noun: "collection" },
};

// replayUI resolves once ReplayWeb.page's ui.js (loaded by index.html)
// has defined <replay-web-page>.
function replayUI() {
  return Promise.race([
    customElements.whenDefined("replay-web-page"),
    new Promise((_, reject) => setTimeout(() => reject(new Error("The replay viewer could not be loaded.")), 30000)),
  ]);
}

export function replayView(main, ctx, kind, id, pageURL) {
  const k = replayKinds[kind];
  const base = `/orgs/${ctx.orgId}/${k.path}/${encodeURIComponent(id)}`;
  let left = false;
  const title = h("h1", { id: "replay-title" }, `Replay of the ${k.noun}`);
  const status = h("p", { class: "muted", id: "replay-status" }, "Loading…");
  const frame = h("div", { class: "replay-frame", id: "replay" });
  main.replaceChildren(
    h("p", {}, h("a", { href: backHref(kind, id) }, "← Back")),
    title,
    h("p", { class: "actions" },
      h("a", { href: downloadURL(base + "/download"), id: "replay-download", download: "" }, `Download the ${k.noun} (WACZ)`)),
    status, frame);

  (async () => {
    let item;
    try {
      [item] = await Promise.all([api(base + "/replay.json"), replayUI()]);
    } catch (e) {
      if (left) return;
      status.className = "error";
      status.setAttribute("role", "alert");
      status.textContent = e.status === 404 ? `There is no such ${k.noun} in this organisation.` : errorText(e);
      return;
    }
    if (left) return;
    title.textContent = `Replay of ${item.name || item.id}`;
    const files = item.resources || [];
    if (!files.length) {
      status.textContent = `This ${k.noun} has no files to replay yet.`;
      return;
    }
    status.textContent = "";
    status.hidden = true;
    const attrs = {
      source: "/api" + base + "/replay.json",
      coll: item.id,
      replaybase: "/replay/",
      config: JSON.stringify({ headers: { Authorization: "Bearer " + session.token } }),
      nosandbox: true,
      nocache: true,
    };
    if (pageURL) attrs.url = pageURL;
    else attrs.view = "pages";
    frame.replaceChildren(h("replay-web-page", attrs));
    main.dataset.loaded = "true";
  })();
  return () => { left = true; };
}

function backHref(kind, id) {
  return kind === "crawls" ? "#/crawls/" + encodeURIComponent(id) : "#/";
}

// replayLink is the link to an item's Replay view.
export function replayLink(kind, id, text = "Replay") {
  return h("a", { href: `#/${kind}/${encodeURIComponent(id)}/replay`, class: "replay-link" }, text);
}
