/**
 * `fred_provider_balance`: the provider key's balance in the fee denom, the account every
 * withdrawal, grant and top-up (and, without sub-signers, every lease tx) pays from. Read
 * with the sub-signer lanes' balance query, at most once a minute, when a scrape asks; a
 * scrape waits at most a second for a read it started and otherwise shows the last value
 * (none until one read succeeded), so a slow chain never holds /metrics up.
 */
import type { Registry } from "prom-client";
import { scrapeGauge } from "../../chain/metrics.ts";
import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";

export const BALANCE_REFRESH_MS = 60_000;
const READ_TIMEOUT_MS = 10_000;
const SCRAPE_WAIT_MS = 1_000;

export interface ProviderBalanceSource {
  address: string;
  denom: string;
  read(address: string, denom: string, signal: AbortSignal): Promise<bigint>;
  clock: Clock;
  logger: Logger;
}

export function registerProviderBalance(registry: Registry, s: ProviderBalanceSource): void {
  let last: bigint | undefined;
  let triedAt = Number.NEGATIVE_INFINITY;
  let running: Promise<void> | undefined;
  const timedOut = () => new Error("balance read timed out");
  const refresh = (): Promise<void> | undefined => {
    if (running !== undefined) return running;
    if (s.clock.now() - triedAt < BALANCE_REFRESH_MS) return undefined;
    triedAt = s.clock.now();
    running = withDeadline(s.clock, READ_TIMEOUT_MS, undefined, timedOut, (signal) =>
      s.read(s.address, s.denom, signal),
    )
      .then(
        (value) => {
          last = value;
        },
        (err: unknown) => s.logger.warn({ err }, "provider balance read failed; the last value stays"),
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  scrapeGauge(registry)(
    "fred_provider_balance",
    "The provider key's fee-denom balance, as last read (refreshed at most once a minute)",
    ["denom"],
    async (g) => {
      const pending = refresh();
      if (pending !== undefined)
        await withDeadline(s.clock, SCRAPE_WAIT_MS, undefined, timedOut, () => pending).catch(() => {});
      if (last !== undefined) g.set({ denom: s.denom }, Number(last));
    },
  );
}
