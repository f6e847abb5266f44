// The CLI runs from one JavaScript bundle of src/, built by esbuild on first use and again
// whenever a source changed (about 0.3 s). Running the TypeScript through tsx's loader
// instead costs every process ~60 MB for its whole life (the loader's own thread and V8
// isolate, and a transform per module), which a long-lived providerd cannot afford.
//
// The bundle's name carries a stamp of the sources it was built from (newest mtime of every
// file and directory under src/, and their count, so an edit, an addition and a removal all
// change it): a stale bundle is never run, and processes racing to build write their own
// temporary file and rename it into place, so none ever reads a half-written one.
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// Inside the package (not /tmp): the bundle resolves its npm dependencies from ROOT/node_modules,
// and src/version.ts finds the package root as the bundle's parent directory.
const DIST = join(ROOT, "dist");
const ENTRY = join(ROOT, "src", "cli", "main.ts");

function sourceStamp() {
  const src = join(ROOT, "src");
  let newest = Math.max(statSync(src).mtimeMs, statSync(join(ROOT, "package.json")).mtimeMs);
  const entries = readdirSync(src, { recursive: true });
  for (const entry of entries) newest = Math.max(newest, statSync(join(src, entry)).mtimeMs);
  return `${Math.floor(newest).toString(36)}-${entries.length.toString(36)}`;
}

/**
 * The path of an up-to-date bundle of the CLI, building it if needed; undefined when it
 * cannot be built here (e.g. a read-only install), so the caller runs the sources instead.
 */
export async function ensureBundle() {
  const file = join(DIST, `fred-${sourceStamp()}.mjs`);
  try {
    statSync(file);
    return file;
  } catch {
    // Not built yet for these sources.
  }
  try {
    const { build } = await import("esbuild");
    const { outputFiles } = await build({
      entryPoints: [ENTRY],
      outfile: file,
      write: false,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      // npm packages stay imports resolved at run time: only our own sources are bundled.
      packages: "external",
      // Function and class names survive, so stack traces and logs stay readable;
      // `node --enable-source-maps` maps them back to src/ through the linked map.
      keepNames: true,
      sourcemap: "linked",
      logLevel: "silent",
    });
    mkdirSync(DIST, { recursive: true });
    // The map first: whoever sees the bundle also finds its map.
    for (const out of outputFiles.sort((a) => (a.path.endsWith(".map") ? -1 : 1))) {
      const tmp = `${out.path}.${process.pid}.tmp`;
      writeFileSync(tmp, out.contents);
      renameSync(tmp, out.path);
    }
    const keep = new Set([basename(file), `${basename(file)}.map`]);
    for (const old of readdirSync(DIST)) {
      if (!keep.has(old) && !old.endsWith(".tmp")) rmSync(join(DIST, old), { force: true });
    }
    return file;
  } catch {
    return undefined;
  }
}
