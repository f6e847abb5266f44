import { execFile } from "node:child_process";
import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";

/**
 * The one place the backend runs `nft` (Debian package `nftables`): one call, bounded by a
 * named deadline on the injected clock, the script (if any) on stdin. A failure carries
 * nft's first stderr line, which is operator text only (it never reaches a tenant).
 */

export const NFT_CALL_TIMEOUT_MS = 10_000;

export interface NftOptions {
  clock: Clock;
  signal?: AbortSignal | undefined;
  /** The binary; `nft` from PATH unless a test says otherwise. */
  bin?: string;
}

export function runNft(
  args: readonly string[],
  stdin: string | undefined,
  opts: NftOptions,
): Promise<string> {
  const timeout = () =>
    new FredError(
      "ERR_EGRESS_NFT_TIMEOUT",
      `nft ${args.join(" ")} did not finish within ${NFT_CALL_TIMEOUT_MS} ms`,
    );
  return withDeadline(
    opts.clock,
    NFT_CALL_TIMEOUT_MS,
    opts.signal,
    timeout,
    (signal) =>
      new Promise<string>((resolve, reject) => {
        const child = execFile(
          opts.bin ?? "nft",
          [...args],
          { signal, maxBuffer: 16 << 20 },
          (err, stdout, stderr) => {
            if (!err) return resolve(stdout);
            const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
            const detail = missing
              ? "the nft command is not installed (Debian package nftables)"
              : String(stderr || err.message)
                  .trim()
                  .split("\n")[0];
            reject(new FredError("ERR_EGRESS_FIREWALL", `nft ${args.join(" ")}: ${detail}`, { cause: err }));
          },
        );
        child.stdin?.on("error", () => {}); // a missing binary closes stdin; the callback reports it
        child.stdin?.end(stdin ?? "");
      }),
  );
}
