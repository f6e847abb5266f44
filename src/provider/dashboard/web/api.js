// The page's only way to the read API: GET with the operator token as a bearer token.
// The token lives in sessionStorage (gone when the tab closes); a 401 forgets it, and the
// listeners registered with onUnauthorized bring back the token form.
import { useEffect, useState } from "./html.js";
import { tokenFromHash } from "./route.js";

const TOKEN_KEY = "fred-operator-token";
const unauthorizedListeners = new Set();

export function readToken() {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function saveToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * Takes a `#token=…` out of the address bar (the URL `fred up` prints) into sessionStorage,
 * and replaces the URL so the token is neither in the history nor on screen.
 */
export function adoptTokenFromUrl() {
  const token = tokenFromHash(location.hash);
  if (token === undefined) return;
  saveToken(token);
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

export function onUnauthorized(listener) {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** GET `path` (an /api/ path) as JSON; throws ApiError (status 0 when the request failed). */
export async function getJson(path) {
  const token = readToken();
  if (token === undefined) throw unauthorized(token);
  let res;
  try {
    res = await fetch(path, {
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(0, "providerd did not answer");
  }
  if (res.status === 401) throw unauthorized(token);
  let body;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(res.status, `HTTP ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const reason = typeof body?.error === "string" ? body.error : "request failed";
    throw new ApiError(res.status, `HTTP ${res.status}: ${reason}`);
  }
  return body;
}

/**
 * The token `refused` is forgotten and the form comes back, unless another token replaced
 * it meanwhile (a late 401 for the old token must not drop the one just pasted).
 */
function unauthorized(refused) {
  if (readToken() === refused) {
    forgetToken();
    for (const listener of unauthorizedListeners) listener();
  }
  return new ApiError(401, "the operator token was refused");
}

/**
 * `{data, error, loading}` of GET `path`, fetched again whenever `path` or `tick` changes.
 * The last good data stays on screen beside an error from a later refresh. An answer for an
 * earlier path is dropped rather than aborted, so no request shows as failed.
 */
export function useApi(path, tick) {
  const [state, setState] = useState({ path, data: null, error: null, loading: true });
  useEffect(() => {
    let current = true;
    setState((s) =>
      s.path === path ? { ...s, loading: true } : { path, data: null, error: null, loading: true },
    );
    getJson(path).then(
      (data) => current && setState({ path, data, error: null, loading: false }),
      (error) =>
        current && setState((s) => ({ path, data: s.path === path ? s.data : null, error, loading: false })),
    );
    return () => {
      current = false;
    };
  }, [path, tick]);
  return state.path === path ? state : { path, data: null, error: null, loading: true };
}
