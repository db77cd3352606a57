// The dashboard: a hash-routed page per view (#/login, #/, #/crawls/<id>,
// #/<crawls|uploads|collections>/<id>/replay).
// Each view renders into <main> and returns a function that stops what it
// started (timers, event streams) when the view is left.

import { api, login, serverConfig, session } from "./api.js";
import { h, announce, errorText } from "./ui.js";
import { homeView } from "./home.js";
import { crawlView } from "./crawl.js";
import { replayView, replayKinds } from "./replay.js";

const main = document.getElementById("main");
const ctx = { orgId: null, orgs: [], role: 0, maxScale: 1, me: null };
let leave = () => {};

session.onExpired = () => {
  announce("Your session expired. Please log in again.");
  location.hash = "#/login";
};

function loginView() {
  const error = h("p", { class: "error", role: "alert", id: "login-error" });
  const form = h("form", { id: "login", class: "card narrow", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Log in"),
    h("label", {}, "E-mail", h("input", { name: "username", type: "email", autocomplete: "username", required: true })),
    h("label", {}, "Password", h("input", { name: "password", type: "password", autocomplete: "current-password", required: true })),
    h("button", { type: "submit" }, "Log in"),
    error);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    const f = new FormData(form);
    try {
      await login(f.get("username"), f.get("password"));
      await loadAccount();
      location.hash = "#/";
    } catch (e) {
      error.textContent = errorText(e);
    }
  });
  main.replaceChildren(form);
  form.querySelector("input").focus();
  return () => {};
}

// loadAccount reads who is logged in and their orgs.
async function loadAccount() {
  const me = await api("/users/me-with-orgs");
  ctx.me = me;
  let orgs = me.orgs.map((o) => ({ id: o.id, name: o.name, role: o.role, default: o.default }));
  if (me.is_superuser) {
    const all = await api("/orgs?pageSize=1000");
    orgs = all.items.map((o) => ({ id: o.id, name: o.name, role: 100, default: o.default }));
  }
  ctx.orgs = orgs;
  const saved = sessionStorage.getItem("trawler.org");
  const org = orgs.find((o) => o.id === saved) || orgs.find((o) => o.default) || orgs[0];
  setOrg(org);
  document.getElementById("who").textContent = me.email;
  const sel = document.getElementById("org");
  sel.replaceChildren(...orgs.map((o) => new Option(o.name, o.id, false, org && o.id === org.id)));
  document.getElementById("org-picker").hidden = orgs.length < 2;
  document.getElementById("account").hidden = false;
}

function setOrg(org) {
  ctx.orgId = org ? org.id : null;
  ctx.role = org ? org.role : 0;
  if (org) sessionStorage.setItem("trawler.org", org.id);
}

function logout() {
  session.token = null;
  ctx.me = null;
  document.getElementById("account").hidden = true;
  location.hash = "#/login";
}

async function route() {
  leave();
  leave = () => {};
  delete main.dataset.loaded;
  const hash = location.hash || "#/";
  if (!session.token) {
    if (hash !== "#/login") { location.hash = "#/login"; return; }
    leave = loginView();
    return;
  }
  if (!ctx.me) {
    try {
      await loadAccount();
    } catch (e) {
      if (session.token) main.replaceChildren(h("p", { class: "error", role: "alert" }, errorText(e)));
      return;
    }
  }
  const crawl = hash.match(/^#\/crawls\/([^/?]+)$/);
  const replay = hash.match(/^#\/(\w+)\/([^/?]+)\/replay(?:\?(.*))?$/);
  if (hash === "#/login") {
    location.hash = "#/";
  } else if (replay && Object.hasOwn(replayKinds, replay[1])) {
    const page = new URLSearchParams(replay[3] || "").get("url");
    leave = replayView(main, ctx, replay[1], decodeURIComponent(replay[2]), page);
  } else if (crawl) {
    leave = crawlView(main, ctx, decodeURIComponent(crawl[1]));
  } else {
    leave = homeView(main, ctx);
  }
  main.focus({ preventScroll: true });
}

document.getElementById("logout").addEventListener("click", logout);
document.getElementById("org").addEventListener("change", (ev) => {
  setOrg(ctx.orgs.find((o) => o.id === ev.target.value));
  if (location.hash === "#/" || location.hash === "") route();
  else location.hash = "#/";
});
window.addEventListener("hashchange", route);

serverConfig().then((cfg) => { ctx.maxScale = cfg.maxScale || 1; }).finally(route);
