"use strict";
// The dashboard keeps its token in sessionStorage and polls the crawl list
// every two seconds while the page is open.
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("token");
let orgId = null;

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers, token ? { Authorization: "Bearer " + token } : {});
  const resp = await fetch("/api" + path, Object.assign({}, opts, { headers }));
  if (resp.status === 401) { logout(); throw new Error("Session expired"); }
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const d = body.detail;
    throw new Error(typeof d === "string" ? d : JSON.stringify(d));
  }
  return body;
}

function show(loggedIn) {
  $("login-view").hidden = loggedIn;
  $("main-view").hidden = !loggedIn;
  $("logout").hidden = !loggedIn;
}

function logout() {
  token = null;
  sessionStorage.removeItem("token");
  $("who").textContent = "";
  show(false);
}

$("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  const resp = await fetch("/api/auth/jwt/login", { method: "POST", body: new URLSearchParams(new FormData(ev.target)) });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) { $("login-error").textContent = body.detail || resp.statusText; return; }
  token = body.access_token;
  sessionStorage.setItem("token", token);
  await start();
});

$("logout").addEventListener("click", logout);
$("org").addEventListener("change", (ev) => { orgId = ev.target.value; refresh(); });

$("start").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("start-error").textContent = "";
  const f = new FormData(ev.target);
  const body = {
    name: f.get("url"),
    runNow: true,
    scale: Number(f.get("scale")),
    config: { seeds: [{ url: f.get("url") }], scopeType: f.get("scopeType"), limit: Number(f.get("limit")) },
  };
  try {
    await api(`/orgs/${orgId}/crawlconfigs/`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    refresh();
  } catch (e) { $("start-error").textContent = e.message; }
});

function humanSize(n) {
  if (!n) return "0 B";
  const units = ["B", "kB", "MB", "GB", "TB"];
  const i = Math.min(units.length - 1, Math.floor(Math.log10(n) / 3));
  return (n / 1000 ** i).toFixed(i ? 1 : 0) + " " + units[i];
}

const finished = new Set(["complete", "partial_complete", "canceled", "failed"]);

function action(label, crawl, path, body) {
  const b = document.createElement("button");
  b.textContent = label;
  b.addEventListener("click", async () => {
    try {
      await api(`/orgs/${orgId}/crawls/${crawl.id}/${path}`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
      });
      refresh();
    } catch (e) { alert(e.message); }
  });
  return b;
}

async function refresh() {
  if (!token || !orgId) return;
  const list = await api(`/orgs/${orgId}/crawls?sortBy=started&pageSize=50`);
  const rows = list.items.map((c) => {
    const tr = document.createElement("tr");
    const stats = c.stats || { done: 0, found: 0, size: 0 };
    for (const [text, cls] of [[c.id], [c.name || ""], [c.state, "state"], [`${stats.done} / ${stats.found}`],
      [humanSize(stats.size)], [String(c.fileCount || 0)], [c.started || ""]]) {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    const td = document.createElement("td");
    if (!finished.has(c.state)) {
      td.append(action("Stop", c, "stop"), action("Cancel", c, "cancel"));
      const scale = document.createElement("select");
      for (let i = 1; i <= 3; i++) scale.add(new Option("scale " + i, i, false, i === c.scale));
      scale.addEventListener("change", () => api(`/orgs/${orgId}/crawls/${c.id}/scale`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ scale: Number(scale.value) }),
      }).then(refresh, (e) => alert(e.message)));
      td.append(scale);
    }
    tr.append(td);
    return tr;
  });
  $("crawls").replaceChildren(...rows);
}

async function start() {
  try {
    const me = await api("/users/me-with-orgs");
    $("who").textContent = me.email;
    const sel = $("org");
    sel.replaceChildren(...me.orgs.map((o) => new Option(o.name, o.id)));
    orgId = me.orgs.length ? me.orgs[0].id : null;
    if (!orgId) {
      const orgs = await api("/orgs");
      sel.replaceChildren(...orgs.items.map((o) => new Option(o.name, o.id)));
      orgId = orgs.items.length ? orgs.items[0].id : null;
    }
    show(true);
    refresh();
  } catch (e) {
    logout();
  }
}

setInterval(() => refresh().catch(() => {}), 2000);
if (token) start(); else show(false);
