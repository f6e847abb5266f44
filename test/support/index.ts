/**
 * Test support: the one process launcher, the one poller, the one port policy and the one
 * devnet of the suite. Handles support `await using`; Symbol.asyncDispose exists on every
 * Node this project runs on (≥ 22.12), so nothing is polyfilled.
 */

export { type Devnet, type DevnetKeys, type DevnetOptions, devnet } from "./devnet.ts";
export { listenLoopback, pickFreePort, portOf } from "./ports.ts";
export {
  type Exit,
  FRED_BIN,
  type Launched,
  type LaunchOptions,
  launchFred,
  launchProgram,
  launchScript,
  REPO_ROOT,
  type RunOptions,
  type RunResult,
  runFred,
  type Stream,
} from "./process.ts";
export { type UntilOptions, until } from "./until.ts";
