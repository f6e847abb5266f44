import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The page shell and its assets, which carry no data and need no token. From a clone the
 * page's modules are served from src/provider/dashboard/web/ and its libraries from
 * node_modules (only the allowed packages, under /assets/vendor/<package>/…); an installed
 * package serves the bundle scripts/build-package.mjs wrote to lib/dashboard/. `/` is the
 * root's index.html, `/assets/<path>` the root's `<path>`.
 */
const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".txt": "text/plain; charset=utf-8",
};

/** The libraries the development page imports through its import map. */
export const VENDOR_PACKAGES: readonly string[] = ["preact", "htm", "uplot"];
/** No asset of ours is larger; anything bigger is not served. */
const MAX_ASSET_BYTES = 8 * 1024 * 1024;

export interface WebRoot {
  /** Where index.html and the assets are read from. */
  dir: string;
  /** node_modules, in development (the vendor packages); undefined in a package. */
  modules: string | undefined;
  kind: "source" | "package";
  /**
   * The CSP source admitting the page's inline import map (`'sha256-…'`), from source only:
   * to CSP an inline import map is an inline script, which `script-src 'self'` refuses.
   * The packaged page has none.
   */
  importMapHash?: string;
}

/** `'sha256-<base64>'` of the text of index.html's `<script type="importmap">`, or undefined. */
export function importMapHash(indexHtml: string): string | undefined {
  const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml);
  if (map === null) return undefined;
  return `'sha256-${createHash("sha256")
    .update(map[1] as string, "utf8")
    .digest("base64")}'`;
}

/** The package root: the nearest directory above this module holding package.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

/** A clone's sources win over a lib/ left by an earlier `npm pack`, as bin/fred.js does. */
export function findWebRoot(root = packageRoot()): WebRoot {
  const source = join(root, "src", "provider", "dashboard", "web");
  if (existsSync(join(source, "index.html"))) {
    const hash = importMapHash(readFileSync(join(source, "index.html"), "utf8"));
    return {
      dir: source,
      modules: join(root, "node_modules"),
      kind: "source",
      ...(hash === undefined ? {} : { importMapHash: hash }),
    };
  }
  return { dir: join(root, "lib", "dashboard"), modules: undefined, kind: "package" };
}

export interface StaticFile {
  body: Buffer;
  type: string;
}

/** The file a URL path names, or undefined (missing, outside the root, or not allowed). */
export async function staticFile(web: WebRoot, urlPath: string): Promise<StaticFile | undefined> {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (rel.includes("\0") || rel.includes("\\")) return undefined;
  let base = web.dir;
  if (rel === "/" || rel === "") rel = "/index.html";
  else if (rel.startsWith("/assets/vendor/")) {
    const pkg = rel.slice("/assets/vendor/".length).split("/")[0] ?? "";
    if (web.modules === undefined || !VENDOR_PACKAGES.includes(pkg)) return undefined;
    // The package's own directory is the root: `..` cannot reach a sibling package.
    base = join(web.modules, pkg);
    rel = rel.slice(`/assets/vendor/${pkg}`.length);
  } else if (rel.startsWith("/assets/")) rel = rel.slice("/assets".length);
  else return undefined;
  const path = normalize(join(base, rel));
  if (!path.startsWith(base + sep)) return undefined;
  const type = TYPES[extname(path)];
  if (type === undefined) return undefined;
  try {
    const info = await stat(path);
    if (!info.isFile() || info.size > MAX_ASSET_BYTES) return undefined;
    return { body: await readFile(path), type };
  } catch {
    return undefined;
  }
}
