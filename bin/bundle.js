// The CLI runs from one JavaScript bundle of src/, built by esbuild on first use and again
// whenever a source changed (about 0.3 s). Running the TypeScript through tsx's loader
// instead costs every process ~60 MB for its whole life (the loader's own thread and V8
// isolate, and a transform per module), which a long-lived providerd cannot afford.
//
// The bundle's name carries a stamp of the sources it was built from (newest mtime of every
// file and directory under src/, package.json and this file, and the count under src/, so an
// edit, an addition and a removal all change it): a stale bundle is never run. Processes racing
// to build write their own temporary files and rename them into place, the entry last, so none
// ever reads a half-written bundle.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// Inside the package (not /tmp): the bundle resolves its npm dependencies from ROOT/node_modules,
// and src/version.ts finds the package root as the bundle's parent directory.
const DIST = join(ROOT, "dist");
const ENTRY = join(ROOT, "src", "cli", "main.ts");

function sourceStamp() {
  const src = join(ROOT, "src");
  // This file too: how the bundle is built is part of what it is.
  let newest = Math.max(
    statSync(src).mtimeMs,
    statSync(join(ROOT, "package.json")).mtimeMs,
    statSync(fileURLToPath(import.meta.url)).mtimeMs,
  );
  const entries = readdirSync(src, { recursive: true });
  for (const entry of entries) newest = Math.max(newest, statSync(join(src, entry)).mtimeMs);
  return `${Math.floor(newest).toString(36)}-${entries.length.toString(36)}`;
}

/**
 * esbuild's options for a bundle of the CLI named `name` (the entry `<name>.mjs`) in `outdir`:
 * the same for the development bundle here and the one `npm pack` ships (scripts/build-package.mjs).
 */
export function bundleOptions(name, outdir) {
  return {
    entryPoints: { [name]: ENTRY },
    outdir,
    outExtension: { ".js": ".mjs" },
    // What the sources import lazily (the Docker backend and its dockerode tree) stays in
    // chunks of its own, loaded only by the commands that need it.
    splitting: true,
    chunkNames: `${name}-chunk-[hash]`,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22.12",
    // npm packages stay imports resolved at run time: only our own sources are bundled.
    packages: "external",
    // Not kept by wrapping: the bundle is not minified, so functions and classes keep their
    // own names, and only the few esbuild renames to avoid a clash between modules get a
    // numeric suffix (no class is among them: logs' error types stay as written).
    // keepNames would wrap every function and closure in a `__name` call, paid each time a
    // closure is made on a hot path (2 % of providerd's JavaScript in a burst).
    // `node --enable-source-maps` maps stack frames back to src/ through the linked maps.
    keepNames: false,
    sourcemap: "linked",
    logLevel: "silent",
  };
}

/**
 * Builds the bundle `name` into `outdir` (esbuild options beside bundleOptions' in `extra`)
 * and writes it, the entry last: whoever sees the entry also finds every chunk and map it
 * refers to. Each file goes through a temporary name, so no reader sees half of it.
 */
export async function writeBundle(name, outdir, extra = {}) {
  const { build } = await import("esbuild");
  const { outputFiles } = await build({ ...bundleOptions(name, outdir), ...extra, write: false });
  mkdirSync(outdir, { recursive: true });
  const entry = join(outdir, `${name}.mjs`);
  const last = outputFiles.filter((o) => o.path === entry);
  for (const out of [...outputFiles.filter((o) => o.path !== entry), ...last]) {
    const tmp = `${out.path}.${process.pid}.tmp`;
    writeFileSync(tmp, out.path.endsWith(".mjs") ? asciiOnly(out.text) : out.contents);
    renameSync(tmp, out.path);
  }
}

/**
 * esbuild escapes non-ASCII characters in strings, regular expressions and names, but keeps
 * comments inside class bodies verbatim. V8 holds every module's source for the life of the
 * process, and one character outside Latin-1 (a "→" in a comment) stores the whole file at
 * two bytes a character: 1.1 MB more for the CLI bundle. Whatever is still non-ASCII here
 * is comment text, so escaping it changes no behaviour.
 */
function asciiOnly(text) {
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * The path of an up-to-date bundle of the CLI, building it if needed; undefined when it
 * cannot be built here (e.g. a read-only install), so the caller runs the sources instead.
 */
export async function ensureBundle() {
  try {
    // Inside the try: a source removed while it is being stamped (an editor's temporary
    // file) makes this run fall back to the sources, not fail.
    const name = `fred-${sourceStamp()}`;
    const file = join(DIST, `${name}.mjs`);
    if (existsSync(file)) return file;
    await writeBundle(name, DIST);
    const ours = (f) => f === `${name}.mjs` || f === `${name}.mjs.map` || f.startsWith(`${name}-chunk-`);
    // Only earlier bundles go: dist/ also holds other build output (dist/release/).
    for (const old of readdirSync(DIST)) {
      if (old.startsWith("fred-") && !ours(old) && !old.endsWith(".tmp"))
        rmSync(join(DIST, old), { force: true });
    }
    return file;
  } catch {
    return undefined;
  }
}
