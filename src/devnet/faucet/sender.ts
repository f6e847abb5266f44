/**
 * The faucet's one signer: bank MsgSend txs from the faucet account, signed with its key and
 * handed to the node's broadcast path (the CheckTx and mempool that broadcast_tx_* use).
 * Building, signing and CheckTx run one at a time through a queue, so every tx takes the
 * next sequence and none is reused; waiting for the block happens outside the queue, so a
 * hundred credits land in the next block together instead of one block each.
 */
import { QueryAccountInfoRequest, QueryAccountInfoResponse } from "cosmjs-types/cosmos/auth/v1beta1/query";
import { QueryAllBalancesRequest, QueryAllBalancesResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import { withDeadline } from "../../core/async/index.ts";
import { hexUpper, sha256 } from "../blocks.ts";
import { requiredFee } from "../gas-price.ts";
import type { DevnetNode } from "../node.ts";
import { buildSignedTx } from "../tx/build.ts";

/** Gas limit of one credit tx: a MsgSend uses well under it. */
export const FAUCET_GAS_LIMIT = 200_000n;
/** How long a credit waits for its block before it is reported as failed. */
const COMMIT_TIMEOUT_MS = 60_000;
/** CheckTx's code for a wrong sequence (another client used the faucet key meanwhile). */
const WRONG_SEQUENCE = 32;

/** A credit that did not happen; `message` is safe to show to the requester. */
export class FaucetSendError extends Error {}

export interface SentCredit {
  hash: string;
  height: number;
}

export class FaucetSender {
  readonly address: string;
  readonly #node: DevnetNode;
  readonly #privateKey: Uint8Array;
  #queue: Promise<unknown> = Promise.resolve();
  /** Account number and the sequence the next tx takes; read from the chain on first use. */
  #account: { number: bigint; sequence: bigint } | undefined;

  constructor(opts: { node: DevnetNode; address: string; privateKey: Uint8Array }) {
    this.#node = opts.node;
    this.address = opts.address;
    this.#privateKey = opts.privateKey;
  }

  /** The fee every credit tx pays, in the node's minimum gas price denom. */
  get fee(): Coin[] {
    const price = this.#node.app.config.minGasPrice;
    const amount = requiredFee(price, FAUCET_GAS_LIMIT);
    return amount === 0n ? [] : [{ denom: price.denom, amount: amount.toString() }];
  }

  /** The faucet account's committed balances. */
  balances(): Coin[] {
    const r = this.#node.app.query(
      "/cosmos.bank.v1beta1.Query/AllBalances",
      QueryAllBalancesRequest.encode({ address: this.address, resolveDenom: false }).finish(),
      this.#node.queryBlock(),
    );
    return r.code === 0 ? QueryAllBalancesResponse.decode(r.value).balances : [];
  }

  /** Sends `amount` to `recipient`; resolves once the tx is in a block and succeeded. */
  async send(recipient: string, amount: Coin, signal?: AbortSignal): Promise<SentCredit> {
    const admitted = this.#queue.then(() => this.#admit(recipient, amount));
    this.#queue = admitted.catch(() => undefined);
    const { hash, committed } = await admitted;
    const tx = await withDeadline(
      this.#node.clock,
      COMMIT_TIMEOUT_MS,
      signal,
      () => new FaucetSendError(`tx ${hash} was not included in a block within ${COMMIT_TIMEOUT_MS / 1000}s`),
      (s) => committed(s),
    );
    if (tx.result.code !== 0) {
      throw new FaucetSendError(`tx ${hash} failed in block ${tx.height}: ${tx.result.log}`);
    }
    return { hash, height: tx.height };
  }

  /** Signs with the next sequence and runs CheckTx; on a wrong sequence, takes the expected one once. */
  async #admit(recipient: string, amount: Coin) {
    const account = this.#account ?? this.#readAccount();
    for (let attempt = 0; ; attempt++) {
      const bytes = buildSignedTx({
        chainId: this.#node.chainId,
        messages: [
          {
            typeUrl: "/cosmos.bank.v1beta1.MsgSend",
            value: MsgSend.encode({
              fromAddress: this.address,
              toAddress: recipient,
              amount: [amount],
            }).finish(),
          },
        ],
        signers: [
          { privateKey: this.#privateKey, accountNumber: account.number, sequence: account.sequence },
        ],
        fee: { amount: this.fee, gasLimit: FAUCET_GAS_LIMIT },
      });
      const hash = hexUpper(sha256(bytes));
      // Waiting starts before the tx can be committed, so its block cannot be missed; the
      // caller's deadline (or a refusal) ends the wait.
      const stop = new AbortController();
      const early = this.#node.waitForTx(hash, stop.signal);
      early.catch(() => {});
      let out: Awaited<ReturnType<DevnetNode["broadcast"]>>;
      try {
        out = await this.#node.broadcast(bytes);
      } catch (err) {
        stop.abort(err);
        throw new FaucetSendError(`the node refused the tx: ${(err as Error).message}`);
      }
      if (out.code === 0) {
        account.sequence += 1n;
        this.#account = account;
        const committed = (signal: AbortSignal) => {
          if (signal.aborted) stop.abort(signal.reason);
          else signal.addEventListener("abort", () => stop.abort(signal.reason), { once: true });
          return early;
        };
        return { hash, committed };
      }
      stop.abort(new Error("refused by CheckTx"));
      const expected = /expected (\d+)/.exec(out.log);
      if (out.code === WRONG_SEQUENCE && expected !== null && attempt === 0) {
        account.sequence = BigInt(expected[1] as string);
        continue;
      }
      throw new FaucetSendError(`CheckTx refused the tx (code ${out.code}): ${out.log}`);
    }
  }

  #readAccount(): { number: bigint; sequence: bigint } {
    const r = this.#node.app.query(
      "/cosmos.auth.v1beta1.Query/AccountInfo",
      QueryAccountInfoRequest.encode({ address: this.address }).finish(),
      this.#node.queryBlock(),
    );
    const info = r.code === 0 ? QueryAccountInfoResponse.decode(r.value).info : undefined;
    if (info === undefined) throw new FaucetSendError(`the faucet account ${this.address} is not on chain`);
    return { number: info.accountNumber, sequence: info.sequence };
  }
}
