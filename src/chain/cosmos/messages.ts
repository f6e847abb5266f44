/**
 * Building the billing messages providerd sends: batches split at the chain's 100 UUIDs
 * per message, several messages per tx, and reasons made safe for the chain (control
 * characters stripped; over 256 bytes cut at a character boundary to 253 bytes + "...").
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { MsgAcknowledgeLease, MsgCloseLease, MsgRejectLease, MsgWithdraw } from "../proto/index.ts";

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
