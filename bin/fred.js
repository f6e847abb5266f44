#!/usr/bin/env node
// Entry point of the `fred` CLI. The sources are TypeScript; bundle.js keeps a JavaScript
// bundle of them up to date and we run that. Where none can be built (a read-only install
// without one), tsx's loader runs the sources directly, at a cost in memory.
import { ensureBundle } from "./bundle.js";

// A reader that closes early (`fred … | head`) is not an error worth a stack trace.
process.stdout.on("error", (err) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});
const bundle = await ensureBundle();
let main;
if (bundle === undefined) {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../src/cli/main.ts"));
} else {
  ({ main } = await import(bundle));
}
process.exitCode = await main(process.argv);
