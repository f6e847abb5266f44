// Hash routes of the page (pure: no DOM, so Node tests import it):
//   #/  #/fleet  #/charts  #/leases?q=&state=&backend=&sku=&cursor=  #/leases/<uuid>
// `#token=<token>` is not a route: it is how `fred up` hands the page its token (see api.js).

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The route a location hash names: { page, params } (page "notfound" for anything else). */
export function parseRoute(hash) {
  const raw = hash.startsWith("#") ? hash.slice(1) : hash;
  const q = raw.indexOf("?");
  const path = (q < 0 ? raw : raw.slice(0, q)).replace(/\/+$/, "") || "/";
  const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  if (path === "/") return { page: "overview", params: {} };
  if (path === "/fleet") return { page: "fleet", params: {} };
  if (path === "/charts") {
    const window = query.get("window");
    return { page: "charts", params: { window: WINDOWS.includes(window) ? window : "24h" } };
  }
  if (path === "/leases") {
    const params = {};
    for (const key of LEASE_FILTERS) {
      const value = query.get(key)?.trim();
      if (value) params[key] = value;
    }
    return { page: "leases", params };
  }
  const lease = /^\/leases\/([^/]+)$/.exec(path);
  if (lease !== null) {
    const uuid = safeDecode(lease[1]);
    if (UUID.test(uuid)) return { page: "lease", params: { uuid: uuid.toLowerCase() } };
  }
  return { page: "notfound", params: {} };
}

export const WINDOWS = ["1h", "6h", "24h"];
export const LEASE_FILTERS = ["q", "state", "backend", "sku", "cursor"];

/** The hash of the leases list for these filters (empty ones left out). */
export function leasesHash(params) {
  const query = new URLSearchParams();
  for (const key of LEASE_FILTERS) if (params[key]) query.set(key, params[key]);
  const s = query.toString();
  return s === "" ? "#/leases" : `#/leases?${s}`;
}

/** The `/api/leases` path for the same filters (limit fixed by the page). */
export function leasesApiPath(params, limit = 50) {
  const query = new URLSearchParams();
  for (const key of LEASE_FILTERS) if (params[key]) query.set(key, params[key]);
  query.set("limit", String(limit));
  return `/api/leases?${query}`;
}

/** The token in a `#token=<token>` hash, or undefined when the hash carries none. */
export function tokenFromHash(hash) {
  const m = /^#token=([^&]+)/.exec(hash);
  if (m === null) return undefined;
  const token = safeDecode(m[1]).trim();
  return token === "" ? undefined : token;
}

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
