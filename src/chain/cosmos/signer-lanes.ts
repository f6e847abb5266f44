/**
 * The sub-signer lanes of one provider: which lanes may carry lease txs now, and the
 * level-triggered pass that converges them (grants present, fees funded). Every pass reads
 * the chain afresh and acts on what it read, never on what it remembers:
 *
 * | read says                     | provider's fix tx | lane becomes                  |
 * |-------------------------------|-------------------|-------------------------------|
 * | grants present, funds ≥ floor | —                 | active                        |
 * | grants missing                | MsgGrant ok       | active (once funds are ok)    |
 * | grants missing                | MsgGrant refused  | demoted (the only way there)  |
 * | balance below the floor       | MsgSend top-up    | active once the top-up landed |
 * | the read failed               | —                 | unchanged                     |
 * | fix tx timed out (unknown)    | —                 | unchanged                     |
 *
 * A demoted lane is retried by every later pass and comes back when its grants do. A lane
 * whose tx failed because of its signer (grant gone, no fee funds) is restarted: out of
 * rotation with a fresh sequence owner until a pass confirms it (`fault`).
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import type { NodeConnection } from "./rpc.ts";
import type { TxSigner } from "./signer.ts";
import {
  balanceOf,
  type Coin,
  definitelyRefused,
  grantMsg,
  type LaneFault,
  missingLeaseGrants,
  sendMsg,
} from "./sub-signers.ts";
import type { TxPipeline } from "./tx-pipeline.ts";

export type LaneState = "starting" | "active" | "demoted";

export interface LaneView {
  index: number;
  address: string;
  state: LaneState;
  /** The last balance read of the fee denom (undefined before one succeeded). */
  balance: bigint | undefined;
}

export interface LanePassReport {
  grantsSent: number;
  toppedUp: number;
  /** Reads that failed (grant or balance); their lanes kept their state. */
  readErrors: number;
  /** Fix txs that failed (refused or with an unknown outcome). */
  txErrors: number;
  /** Lanes neither active nor demoted after the pass (the supervisor retries sooner). */
  unsettled: number;
  errors: string[];
}

export interface LaneStats {
  demotions: number;
  restarts: number;
  grantsCreated: number;
  topUps: number;
}

interface Lane {
  index: number;
  signer: TxSigner;
  pipeline: TxPipeline;
  state: LaneState;
  balance: bigint | undefined;
  /** Bumped by each restart: a pass that read the lane before it does not activate it. */
  epoch: number;
}

export interface SignerLanesOptions {
  conn: NodeConnection;
  /** The provider key: granter, funder, and the fallback sender. */
  provider: TxPipeline;
  subs: readonly TxSigner[];
  newPipeline: (signer: TxSigner) => TxPipeline;
  minBalance: Coin;
  topUpAmount: Coin;
  /** A lane was restarted because of its signer: run a pass soon. */
  onFault?: (lane: LaneView, fault: LaneFault, err: unknown) => void;
}

export class SignerLanes {
  readonly #options: SignerLanesOptions;
  readonly #lanes: Lane[];
  #next = 0;
  readonly stats: LaneStats = { demotions: 0, restarts: 0, grantsCreated: 0, topUps: 0 };

  constructor(opts: SignerLanesOptions) {
    this.#options = opts;
    this.#lanes = opts.subs.map((signer, index) => ({
      index,
      signer,
      pipeline: opts.newPipeline(signer),
      state: "starting",
      balance: undefined,
      epoch: 0,
    }));
  }

  /** The fee denom balances are read in (sub_signer_min_balance's). */
  get denom(): string {
    return this.#options.minBalance.denom;
  }

  get size(): number {
    return this.#lanes.length;
  }

  view(): LaneView[] {
    return this.#lanes.map(viewOf);
  }

  pipelines(): TxPipeline[] {
    return this.#lanes.map((l) => l.pipeline);
  }

  /**
   * The sender for a lease tx: lane `lane mod N` when active, else the next active one
   * (round robin when no lane is given); undefined when none is active (the provider
   * key sends).
   */
  pick(lane?: number): TxPipeline | undefined {
    const n = this.#lanes.length;
    if (n === 0) return undefined;
    const start = lane === undefined ? this.#next++ % n : lane % n;
    for (let k = 0; k < n; k++) {
      const l = this.#lanes[(start + k) % n] as Lane;
      if (l.state === "active") return l.pipeline;
    }
    return undefined;
  }

  /** A tx on `pipeline` failed because of its signer: restart that lane (once per pipeline). */
  fault(pipeline: TxPipeline, fault: LaneFault, err: unknown): void {
    const lane = this.#lanes.find((l) => l.pipeline === pipeline);
    if (lane === undefined || lane.state !== "active") return;
    lane.state = "starting";
    lane.pipeline = this.#options.newPipeline(lane.signer);
    lane.epoch++;
    this.stats.restarts++;
    this.#options.onFault?.(viewOf(lane), fault, err);
  }

  /** One level-triggered pass over every lane (see the table above). */
  async converge(signal?: AbortSignal): Promise<LanePassReport> {
    const { conn, provider, minBalance: min, topUpAmount } = this.#options;
    const granter = provider.signer.address;
    const report = emptyPassReport();
    const fail = (what: string, err: unknown) => report.errors.push(`${what}: ${(err as Error).message}`);
    const send = async (msgs: EncodeObject[]): Promise<"ok" | "refused" | "unknown"> => {
      try {
        await provider.send(msgs, signal === undefined ? {} : { signal });
        return "ok";
      } catch (err) {
        report.txErrors++;
        fail("fix tx", err);
        return definitelyRefused(err) ? "refused" : "unknown";
      }
    };
    const reads = await Promise.all(
      this.#lanes.map(async (l) => {
        const epoch = l.epoch;
        const [missing, balance] = await Promise.all([
          missingLeaseGrants(conn, granter, l.signer.address, signal).catch((err: unknown) => {
            report.readErrors++;
            fail(`grant read of lane ${l.index}`, err);
            return undefined;
          }),
          balanceOf(conn, l.signer.address, min.denom, signal).catch((err: unknown) => {
            report.readErrors++;
            fail(`balance read of lane ${l.index}`, err);
            return undefined;
          }),
        ]);
        if (balance !== undefined) l.balance = balance;
        return { lane: l, epoch, missing, balance };
      }),
    );
    // One grant tx per lane, so a refusal proves something about that lane alone.
    const grants = await Promise.all(
      reads.map(async (r) => {
        if (r.missing === undefined) return "unread" as const;
        if (r.missing.length === 0) return "present" as const;
        const outcome = await send(r.missing.map((url) => grantMsg(granter, r.lane.signer.address, url)));
        if (outcome === "ok") {
          report.grantsSent += r.missing.length;
          this.stats.grantsCreated += r.missing.length;
          return "present" as const;
        }
        return outcome;
      }),
    );
    const low = reads.filter((r) => r.balance !== undefined && r.balance < min.amount);
    const topUp =
      low.length === 0
        ? "ok"
        : await send(low.map((r) => sendMsg(granter, r.lane.signer.address, topUpAmount)));
    if (low.length > 0 && topUp === "ok") {
      report.toppedUp = low.length;
      this.stats.topUps += low.length;
    }
    reads.forEach((r, i) => {
      const lane = r.lane;
      const grant = grants[i];
      const funded = r.balance !== undefined && (r.balance >= min.amount || topUp === "ok");
      if (grant === "refused") {
        if (lane.state !== "demoted") this.stats.demotions++;
        lane.state = "demoted";
      } else if (grant === "present" && funded && lane.epoch === r.epoch) lane.state = "active";
      if (lane.state === "starting") report.unsettled++;
    });
    return report;
  }
}

export function emptyPassReport(): LanePassReport {
  return { grantsSent: 0, toppedUp: 0, readErrors: 0, txErrors: 0, unsettled: 0, errors: [] };
}

function viewOf(l: Lane): LaneView {
  return { index: l.index, address: l.signer.address, state: l.state, balance: l.balance };
}
