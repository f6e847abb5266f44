/**
 * Building what goes into a transaction before it is signed: its messages and its gas
 * limit and fee. Pure code; the tx pipeline signs and sends the result.
 *
 * Messages: the billing messages providerd sends, with batches split at the chain's 100
 * UUIDs per message, several messages per tx, and reasons made safe for the chain (control
 * characters stripped; over 256 bytes cut at a character boundary to 253 bytes + "...").
 *
 * Gas and fee arithmetic is exact (bigint over decimal-scaled inputs), so a limit never
 * lands one unit low because 1.2 is not representable in binary floating point.
 *   gas      = floor(simulated_gas_used × gas_adjustment)
 *   fallback = floor(gas_limit × gas_adjustment)      (simulation failed)
 *   fee      = max(1, ceil(gas × gas_price / 1 000 000)) fee_denom
 * A tx whose gas exceeds max_gas_limit (when > 0) is refused before broadcast; the
 * out-of-gas retry ladder (× 1.5) is clamped by it.
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { isValidDenom } from "../../core/coin.ts";
import { FredError } from "../../core/errors.ts";
import { MsgAcknowledgeLease, MsgCloseLease, MsgRejectLease, MsgWithdraw } from "../proto/index.ts";

// ---- messages ----

export const MAX_UUIDS_PER_MSG = 100;
export const MAX_REASON_BYTES = 256;

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function sanitizeReason(reason: string): string {
  const clean = reason.replace(/[\u0000-\u001f\u007f-\u009f]/g, "");
  if (Buffer.byteLength(clean) <= MAX_REASON_BYTES) return clean;
  let out = "";
  let bytes = 0;
  for (const ch of clean) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > MAX_REASON_BYTES - 3) break;
    out += ch;
    bytes += n;
  }
  return `${out}...`;
}

export type LeaseMsgKind = "acknowledge" | "reject" | "close";

export function leaseMsgs(
  kind: LeaseMsgKind,
  sender: string,
  uuids: readonly string[],
  reason = "",
): EncodeObject[] {
  return chunk(uuids, MAX_UUIDS_PER_MSG).map((leaseUuids): EncodeObject => {
    if (kind === "acknowledge")
      return {
        typeUrl: MsgAcknowledgeLease.typeUrl,
        value: MsgAcknowledgeLease.fromPartial({ sender, leaseUuids }),
      };
    if (kind === "reject")
      return {
        typeUrl: MsgRejectLease.typeUrl,
        value: MsgRejectLease.fromPartial({ sender, leaseUuids, reason }),
      };
    return {
      typeUrl: MsgCloseLease.typeUrl,
      value: MsgCloseLease.fromPartial({ sender, leaseUuids, reason }),
    };
  });
}

export function withdrawLeasesMsg(sender: string, leaseUuids: readonly string[]): EncodeObject {
  return {
    typeUrl: MsgWithdraw.typeUrl,
    value: MsgWithdraw.fromPartial({ sender, leaseUuids: [...leaseUuids] }),
  };
}

export function withdrawProviderMsg(
  sender: string,
  providerUuid: string,
  limit: number,
  key: Uint8Array,
): EncodeObject {
  return {
    typeUrl: MsgWithdraw.typeUrl,
    value: MsgWithdraw.fromPartial({ sender, providerUuid, limit: BigInt(limit), key }),
  };
}

// ---- gas and fee ----

export interface GasConfig {
  gasLimit: number;
  gasAdjustment: number;
  /** 0 = uncapped. */
  maxGasLimit: number;
  /** Micro-units of feeDenom per gas unit. */
  gasPrice: number;
  feeDenom: string;
}

const SCALE = 1_000_000_000n;

/** A non-negative decimal as a fraction over 1e9 (nine decimals are plenty for prices). */
function scaled(value: number, what: string): bigint {
  if (!Number.isFinite(value) || value < 0)
    throw new FredError("ERR_CONFIG", `${what} must be a finite number ≥ 0`);
  const [int, frac = ""] = value.toFixed(9).split(".");
  return BigInt(int as string) * SCALE + BigInt(frac.padEnd(9, "0").slice(0, 9));
}

export function checkGasConfig(c: GasConfig): void {
  if (!Number.isSafeInteger(c.gasLimit) || c.gasLimit <= 0)
    throw new FredError("ERR_CONFIG", "gas_limit must be a positive integer");
  if (!(c.gasAdjustment >= 1 && c.gasAdjustment <= 3))
    throw new FredError("ERR_CONFIG", "gas_adjustment must be in 1.0–3.0");
  if (!Number.isSafeInteger(c.maxGasLimit) || c.maxGasLimit < 0)
    throw new FredError("ERR_CONFIG", "max_gas_limit must be an integer ≥ 0");
  if (c.maxGasLimit > 0 && c.maxGasLimit < c.gasLimit)
    throw new FredError("ERR_CONFIG", "max_gas_limit must be ≥ gas_limit when set");
  scaled(c.gasPrice, "gas_price");
  if (!isValidDenom(c.feeDenom)) throw new FredError("ERR_CONFIG", "fee_denom is not a valid denom");
}

export function adjustGas(gas: number, adjustment: number): number {
  return Number((BigInt(Math.floor(gas)) * scaled(adjustment, "gas_adjustment")) / SCALE);
}

export type GasSource = "simulated" | "fallback" | "retry";

export interface GasPlan {
  gas: number;
  source: GasSource;
}

/**
 * The gas limit for a tx: the adjusted simulation, or the adjusted fallback when
 * simulation failed (`simulated` undefined). Over max_gas_limit → terminal refusal.
 */
export function planGas(simulated: number | undefined, c: GasConfig): GasPlan {
  const plan: GasPlan =
    simulated === undefined
      ? { gas: adjustGas(c.gasLimit, c.gasAdjustment), source: "fallback" }
      : { gas: adjustGas(simulated, c.gasAdjustment), source: "simulated" };
  if (plan.source === "fallback" && c.maxGasLimit > 0) plan.gas = Math.min(plan.gas, c.maxGasLimit);
  if (c.maxGasLimit > 0 && plan.gas > c.maxGasLimit)
    throw new FredError(
      "ERR_TX_GAS_ABOVE_MAX",
      `estimated gas ${plan.gas} exceeds max_gas_limit ${c.maxGasLimit}`,
      {
        details: { gas: plan.gas, max_gas_limit: c.maxGasLimit },
      },
    );
  return plan;
}

/** Fee amount (in fee_denom) for a declared gas limit. */
export function feeFor(gas: number, gasPrice: number): bigint {
  const num = BigInt(Math.ceil(gas)) * scaled(gasPrice, "gas_price");
  const den = 1_000_000n * SCALE;
  const fee = (num + den - 1n) / den;
  return fee < 1n ? 1n : fee;
}

/** Next rung of the out-of-gas ladder (× 1.5, clamped), or undefined when it cannot grow. */
export function outOfGasRetry(gas: number, c: GasConfig): number | undefined {
  let next = Math.floor(gas * 1.5);
  if (c.maxGasLimit > 0) next = Math.min(next, c.maxGasLimit);
  return next > gas ? next : undefined;
}
