import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import { extname, join } from "node:path";
import { DASHBOARD_WEB } from "../../../scripts/dashboard-bundle.mjs";
import { listenLoopback, REPO_ROOT } from "../../support/index.ts";

/**
 * A stand-in for providerd's operator listener in the page's own tests: serves the page
 * (from source with the vendor mapping, or a packaged lib/dashboard/ directory) with the
 * contract's headers, and answers the read API's routes with fixed data in the contract's
 * shapes, behind the same bearer token. The real listener is tested against a real stack in
 * dashboard-stack.test.ts; this one lets the page be checked on data a stack cannot easily
 * make (markup in tenant strings, many pages of leases, alerts firing).
 */
/** The libraries the development page imports through its import map, as providerd allows them. */
const VENDOR_PACKAGES = ["preact", "htm", "uplot"];

const CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

/**
 * The contract's CSP; from source, script-src also admits the import map by its hash (an
 * inline import map is an inline script to CSP, and the packaged page has none).
 */
export function cspFor(indexHtml: string): string {
  const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml);
  if (map === null) return CSP;
  const hash = createHash("sha256").update(map[1]!).digest("base64");
  return CSP.replace("script-src 'self'", `script-src 'self' 'sha256-${hash}'`);
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

export interface FixtureLease {
  uuid: string;
  tenant: string;
  state: string;
  backend: string | null;
  sku: string | null;
  created_at: string | null;
  record_state: string | null;
}

export interface FixtureData {
  overview: unknown;
  fleet: unknown;
  leases: FixtureLease[];
  details: Record<string, unknown>;
  series: unknown;
}

export async function startFixtureServer(opts: { token: string; data: FixtureData; packagedDir?: string }) {
  const dir = opts.packagedDir ?? DASHBOARD_WEB;
  const index = readFileSync(join(dir, "index.html"), "utf8");
  const csp = cspFor(index);
  const apiCalls: string[] = [];

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer) => {
    res.writeHead(status, { "Content-Type": type });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.setHeader("Cache-Control", "no-store");
    send(res, status, "application/json; charset=utf-8", JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "no-referrer");
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname.startsWith("/api/")) {
      apiCalls.push(`${url.pathname}${url.search}`);
      if (req.headers.authorization !== `Bearer ${opts.token}`) {
        res.setHeader("WWW-Authenticate", "Bearer");
        return json(res, 401, { error: "unauthorized", code: 401 });
      }
      return api(url, res, opts.data, json);
    }
    if (url.pathname === "/") return send(res, 200, TYPES[".html"]!, index);
    // /assets/vendor/<package>/<path> → node_modules/<package>/<path>, from source only.
    const vendor = /^\/assets\/vendor\/([\w-]+)\/([\w./-]+)$/.exec(url.pathname);
    if (vendor !== null && opts.packagedDir === undefined && VENDOR_PACKAGES.includes(vendor[1]!)) {
      if (!vendor[2]!.includes("..")) {
        const type = TYPES[extname(vendor[2]!)];
        if (type !== undefined)
          return send(res, 200, type, readFileSync(join(REPO_ROOT, "node_modules", vendor[1]!, vendor[2]!)));
      }
    }
    const asset = /^\/assets\/([\w-]+\.(?:js|css|svg))$/.exec(url.pathname)?.[1];
    if (asset !== undefined) {
      try {
        return send(res, 200, TYPES[extname(asset)]!, readFileSync(join(dir, asset)));
      } catch {
        // falls through to 404
      }
    }
    json(res, 404, { error: "not found", code: 404 });
  });
  const { url } = await listenLoopback(server);
  return {
    url,
    apiCalls,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

function api(
  url: URL,
  res: ServerResponse,
  data: FixtureData,
  json: (res: ServerResponse, status: number, body: unknown) => void,
) {
  const p = url.pathname;
  if (p === "/api/overview") return json(res, 200, data.overview);
  if (p === "/api/fleet") return json(res, 200, data.fleet);
  if (p === "/api/series") {
    const window = url.searchParams.get("window") ?? "24h";
    if (!["1h", "6h", "24h"].includes(window)) return json(res, 400, { error: "bad window", code: 400 });
    return json(res, 200, data.series);
  }
  if (p === "/api/leases") {
    const q = url.searchParams.get("q") ?? "";
    const state = url.searchParams.get("state") ?? "";
    const limit = Number(url.searchParams.get("limit") ?? "50");
    const from = Number(url.searchParams.get("cursor") ?? "0");
    const hits = data.leases.filter(
      (l) =>
        (q === "" || l.uuid.startsWith(q) || l.tenant === q) &&
        (state === "" || l.state === state || l.record_state === state) &&
        (!url.searchParams.get("backend") || l.backend === url.searchParams.get("backend")) &&
        (!url.searchParams.get("sku") || l.sku === url.searchParams.get("sku")),
    );
    const page = hits.slice(from, from + limit);
    const next = from + limit < hits.length ? String(from + limit) : null;
    return json(res, 200, { leases: page, next_cursor: next });
  }
  const uuid = /^\/api\/leases\/([^/]+)$/.exec(p)?.[1];
  if (uuid !== undefined) {
    if (!/^[0-9a-f-]{36}$/.test(uuid))
      return json(res, 400, { error: "invalid lease UUID format", code: 400 });
    const detail = data.details[uuid];
    return detail === undefined
      ? json(res, 404, { error: "lease not found", code: 404 })
      : json(res, 200, detail);
  }
  json(res, 404, { error: "not found", code: 404 });
}
