#!/usr/bin/env node
// Entry point of the `fred` CLI. The sources are TypeScript and ship without a build
// step, so register tsx's loader first and then hand over to the real CLI module.
import { register } from "tsx/esm/api";

register();
// A reader that closes early (`fred … | head`) is not an error worth a stack trace.
process.stdout.on("error", (err) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv);
