#!/usr/bin/env node
// Entry point of the `fred` CLI. An installed package runs the bundle built when it was
// packed (lib/fred.mjs, see scripts/build-package.mjs). A clone runs its TypeScript sources:
// bundle.js keeps a JavaScript bundle of them up to date in dist/ and we run that, or, where
// none can be built (no esbuild, a read-only checkout), tsx's loader runs the sources
// directly, at a cost in memory. src/ wins when both are there, so a clone never runs a
// stale lib/.
import { existsSync } from "node:fs";

// A reader that closes early (`fred … | head`) is not an error worth a stack trace.
process.stdout.on("error", (err) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

let main;
if (existsSync(new URL("../src/cli/main.ts", import.meta.url))) {
  const { ensureBundle } = await import("./bundle.js");
  const bundle = await ensureBundle();
  if (bundle === undefined) {
    const { register } = await import("tsx/esm/api").catch((err) => {
      // esbuild and tsx are development dependencies: a checkout installed without them
      // (`npm ci --omit=dev`) cannot run its sources. The release package can.
      console.error(
        `fred: cannot run the sources in ${new URL("..", import.meta.url).pathname}: no bundle could be ` +
          `built and tsx is not installed (${err.code ?? err.message}). Run \`npm ci\` here (with the ` +
          "development dependencies), or install the release package (docs/operator-guide.md).",
      );
      process.exit(1);
    });
    register();
    ({ main } = await import("../src/cli/main.ts"));
  } else {
    ({ main } = await import(bundle));
  }
} else if (existsSync(new URL("../lib/fred.mjs", import.meta.url))) {
  ({ main } = await import("../lib/fred.mjs"));
} else {
  console.error(
    "fred: this installation has neither src/ nor lib/fred.mjs beside bin/; reinstall the package",
  );
  process.exit(1);
}
process.exitCode = await main(process.argv);
