import { type HmacErrorCode, hmacSecret, signRequest } from "../../../src/auth/hmac.ts";

/**
 * A tiny providerd stand-in for tests: signs requests to a backend the way providerd
 * does (X-Fred-Signature over method, request URI and body hash) and can deliberately
 * break the signature in each of the ways the contract suite checks.
 */
export type Tamper = "none" | "missing" | "body" | "uri" | "stale" | "future" | "wrong-key";

export interface SignedResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  json: unknown;
}

export interface SignedClient {
  get(uri: string, opts?: { tamper?: Tamper; secret?: string }): Promise<SignedResponse>;
  post(
    uri: string,
    body: unknown,
    opts?: { tamper?: Tamper; secret?: string; raw?: string },
  ): Promise<SignedResponse>;
}

const WRONG_SECRET = "this-is-definitely-not-the-right-secret-0123";

/** `now` is the signing time source (a test on a manual clock signs in the backend's time). */
export function signedClient(baseUrl: string, secret: string, now: () => number = Date.now): SignedClient {
  const send = async (
    method: string,
    uri: string,
    body: string | undefined,
    tamper: Tamper,
    keyText: string,
  ): Promise<SignedResponse> => {
    let t = Math.floor(now() / 1000);
    if (tamper === "stale") t -= 6 * 60;
    if (tamper === "future") t += 5 * 60;
    const key = hmacSecret(tamper === "wrong-key" ? WRONG_SECRET : keyText);
    const header = signRequest(key, { method, uri, body, timestamp: t });
    const sentUri = tamper === "uri" ? `${uri}${uri.includes("?") ? "&" : "?"}x=1` : uri;
    const sentBody = tamper === "body" && body !== undefined ? `${body} ` : body;
    const headers: Record<string, string> = {};
    if (tamper !== "missing") headers["x-fred-signature"] = header;
    if (sentBody !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(baseUrl + sentUri, { method, headers, body: sentBody, redirect: "manual" });
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
  return {
    get: (uri, opts = {}) => send("GET", uri, undefined, opts.tamper ?? "none", opts.secret ?? secret),
    post: (uri, body, opts = {}) =>
      send("POST", uri, opts.raw ?? JSON.stringify(body), opts.tamper ?? "none", opts.secret ?? secret),
  };
}

export type { HmacErrorCode };
