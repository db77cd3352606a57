// Small DOM and formatting helpers shared by the views.

// h builds an element: h("a", {href: "#/", class: "x", onclick: f}, "text", child, ...).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== false) el.append(c);
  }
  return el;
}

// States as people read them, and the colour family of their badge.
const stateInfo = {
  starting: ["Starting", "waiting"],
  waiting_capacity: ["Waiting for capacity", "waiting"],
  waiting_org_limit: ["Waiting (org limit)", "waiting"],
  running: ["Running", "running"],
  "pending-wait": ["Finishing pages", "finishing"],
  "generate-wacz": ["Generating WACZ", "finishing"],
  "uploading-wacz": ["Uploading WACZ", "finishing"],
  paused: ["Paused", "waiting"],
  paused_storage_quota_reached: ["Paused (storage quota)", "waiting"],
  paused_time_quota_reached: ["Paused (execution-time quota)", "waiting"],
  paused_org_readonly: ["Paused (org read-only)", "waiting"],
  complete: ["Complete", "good"],
  partial_complete: ["Partially complete", "good"],
  stopped_pause_expired: ["Stopped (pause expired)", "good"],
  canceled: ["Canceled", "neutral"],
  failed: ["Failed", "bad"],
  skipped_storage_quota_reached: ["Skipped (storage quota)", "bad"],
  skipped_time_quota_reached: ["Skipped (execution-time quota)", "bad"],
};

export const finalStates = new Set(["complete", "partial_complete", "stopped_pause_expired", "canceled", "failed",
  "skipped_storage_quota_reached", "skipped_time_quota_reached"]);

// pausedStates are the states of a paused crawl (it has not ended).
export const pausedStates = new Set(["paused", "paused_storage_quota_reached", "paused_time_quota_reached",
  "paused_org_readonly"]);

export function stateLabel(state) {
  return (stateInfo[state] || [state || "—"])[0];
}

// badge is a crawl state as a coloured label (the colour only repeats
// what the text says).
export function badge(state) {
  const family = (stateInfo[state] || [null, "neutral"])[1];
  return h("span", { class: `badge badge-${family}`, "data-state": state || "" }, stateLabel(state));
}

export function humanSize(n) {
  if (!n) return "0 B";
  const units = ["B", "kB", "MB", "GB", "TB"];
  const i = Math.min(units.length - 1, Math.floor(Math.log10(n) / 3));
  return (n / 1000 ** i).toFixed(i ? 1 : 0) + " " + units[i];
}

export function humanDuration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const parts = [];
  if (s >= 3600) parts.push(Math.floor(s / 3600) + " h");
  if (s >= 60) parts.push(Math.floor((s % 3600) / 60) + " min");
  parts.push((s % 60) + " s");
  return parts.join(" ");
}

// apiDate reads the API's naive UTC timestamps ("2023-09-11T17:38:04").
export function apiDate(s) {
  return s ? new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : s + "Z") : null;
}

export function fmtDate(s) {
  const d = apiDate(s);
  return d ? d.toLocaleString() : "—";
}

export function number(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString();
}

// announce tells screen-reader users about a change they did not cause
// by focus (state changes, results of actions).
export function announce(msg) {
  const el = document.getElementById("announcer");
  el.textContent = "";
  // A fresh text node, so that the same message twice is read twice.
  setTimeout(() => { el.textContent = msg; }, 50);
}

// confirmAction asks in a modal dialog (keyboard: Tab between the two
// buttons, Escape keeps things as they are) and resolves to true on yes.
export function confirmAction(title, text, yesLabel) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-yes").textContent = yesLabel;
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      if (opener && opener.isConnected) opener.focus();
    }, { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
    document.getElementById("confirm-no").focus();
  });
}

// errorText is a message for an error the user should see.
export function errorText(err) {
  return err && err.message ? err.message : String(err);
}
