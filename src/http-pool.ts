/**
 * undici's connection Pool, without the rest of undici. `import { Pool } from "undici"`
 * evaluates the whole package: fetch, WebSocket, EventSource, the caches, the mocks, and,
 * through its cookie helpers' touch of `globalThis.Headers`, Node's own bundled copy of
 * undici as well. providerd keeps about 4 MB of module sources and code for all that for
 * its whole life and uses none of it (docs/benchmarks.md, "Idle memory"). The pool's own
 * modules are what this loads.
 *
 * The request methods (`request`, `stream`, …) are attached to undici's Dispatcher by the
 * package's index, so they are attached here the same way; loading the index later (the
 * backend kit, the CLI) assigns the same functions again. The paths are undici's file
 * layout, pinned by the lockfile: a version that moves them fails at load, in every test of
 * the backend client (test/provider/backend-client/) and test/cli/lazy-commands.test.ts.
 */
import { createRequire } from "node:module";
import type { Pool as UndiciPool } from "undici";

const require = createRequire(import.meta.url);
const dispatcher = require("undici/lib/dispatcher/dispatcher.js") as { prototype: object };
Object.assign(dispatcher.prototype, require("undici/lib/api/index.js") as object);

export const Pool = require("undici/lib/dispatcher/pool.js") as typeof UndiciPool;
export type Pool = UndiciPool;
