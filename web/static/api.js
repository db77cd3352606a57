// The dashboard's only way to the server: the public REST API, with the
// login token kept for the browser tab (sessionStorage).

const tokenKey = "trawler.token";

export class APIError extends Error {
  constructor(status, detail) {
    super(typeof detail === "string" ? detail : JSON.stringify(detail));
    this.status = status;
  }
}

export const session = {
  get token() { return sessionStorage.getItem(tokenKey); },
  set token(t) {
    if (t) sessionStorage.setItem(tokenKey, t);
    else sessionStorage.removeItem(tokenKey);
  },
  // onExpired is called when the server no longer accepts the token.
  onExpired: () => {},
};

// api calls /api<path> with the token and returns the decoded JSON body;
// an error status throws APIError with the server's detail.
export async function api(path, { method = "GET", body, text = false } = {}) {
  const headers = {};
  if (session.token) headers.Authorization = "Bearer " + session.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch("/api" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (resp.status === 401 && session.token) {
    session.token = null;
    session.onExpired();
  }
  if (!resp.ok) {
    const err = await resp.json().catch(() => ({}));
    throw new APIError(resp.status, err.detail || resp.statusText);
  }
  return text ? resp.text() : resp.json();
}

// login exchanges an e-mail and password for a token.
export async function login(email, password) {
  const resp = await fetch("/api/auth/jwt/login", {
    method: "POST",
    body: new URLSearchParams({ username: email, password }),
  });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    throw new APIError(resp.status, body.detail === "LOGIN_BAD_CREDENTIALS"
      ? "Wrong e-mail or password." : (body.detail || resp.statusText));
  }
  session.token = body.access_token;
}

// events opens a crawl's event stream. EventSource cannot send headers,
// so the token goes in the auth_bearer query parameter, which the API
// accepts on every route, as upstream's does.
export function crawlEvents(orgId, crawlId) {
  const q = new URLSearchParams({ auth_bearer: session.token || "" });
  return new EventSource(`/api/orgs/${orgId}/crawls/${encodeURIComponent(crawlId)}/events?${q}`);
}

// downloadURL is a link to a streamed download under /api. A plain link
// cannot send headers, so the token goes in the auth_bearer query
// parameter, as for the event stream.
export function downloadURL(path) {
  const q = new URLSearchParams({ auth_bearer: session.token || "" });
  return `/api${path}?${q}`;
}

// serverConfig is what the server tells the dashboard (the largest scale).
export async function serverConfig() {
  const resp = await fetch("config.json");
  return resp.ok ? resp.json() : { maxScale: 1 };
}
