/**
 * Builds websocket frames the way CometBFT 0.38 does (cometbft-rpc.md §3): a Tx push carries
 * the structured events under data.value.TxResult.result.events and the flattened
 * "<type>.<key>" → [values] map under result.events.
 */
import { createHash } from "node:crypto";
import type { AbciEvent } from "../../../src/chain/events/types.ts";

export function ev(type: string, attrs: Record<string, string>): AbciEvent {
  return { type, attributes: Object.entries(attrs).map(([key, value]) => ({ key, value })) };
}

export function flatten(events: AbciEvent[], extra: Record<string, string[]>): Record<string, string[]> {
  const map: Record<string, string[]> = { ...extra };
  for (const e of events) {
    for (const a of e.attributes) {
      const k = `${e.type}.${a.key}`;
      const list = map[k] ?? [];
      list.push(a.value);
      map[k] = list;
    }
  }
  return map;
}

export function txFrame(id: number, query: string, height: number, events: AbciEvent[], seed = "tx"): string {
  const tx = Buffer.from(`${seed}-${height}`).toString("base64");
  const hash = createHash("sha256").update(Buffer.from(tx, "base64")).digest("hex").toUpperCase();
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    result: {
      query,
      data: {
        type: "tendermint/event/Tx",
        value: {
          TxResult: {
            height: String(height),
            index: 0,
            tx,
            result: { code: 0, data: "", log: "", gas_wanted: "200000", gas_used: "150000", events },
          },
        },
      },
      events: flatten(events, { "tm.event": ["Tx"], "tx.hash": [hash], "tx.height": [String(height)] }),
    },
  });
}

export function blockEventsFrame(id: number, height: number, events: AbciEvent[]): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    result: {
      query: "tm.event='NewBlockEvents'",
      data: {
        type: "tendermint/event/NewBlockEvents",
        value: { height: String(height), events, num_txs: "0" },
      },
      events: flatten(events, { "tm.event": ["NewBlockEvents"] }),
    },
  });
}

export function headerFrame(id: number, height: number): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    result: {
      query: "tm.event='NewBlockHeader'",
      data: { type: "tendermint/event/NewBlockHeader", value: { header: { height: String(height) } } },
      events: { "tm.event": ["NewBlockHeader"] },
    },
  });
}

export const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
export const OTHER_PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000bb";
export const TENANT = "manifest1hj5fveer5cjtn4wd6wstzugjfdxzl0xp8ws9ct";

export function leaseUuid(i: number): string {
  return `0190f3a2-7c1e-7000-8000-${i.toString(16).padStart(12, "0")}`;
}

/** A batch-created tx: n lease_created events plus the noise a real tx carries. */
export function createdEvents(n: number, provider = PROVIDER, offset = 0): AbciEvent[] {
  const out: AbciEvent[] = [
    ev("tx", { fee: "5000umfx", fee_payer: TENANT }),
    ev("message", {
      action: "/liftedinit.billing.v1.MsgCreateLease",
      sender: TENANT,
      module: "billing",
      msg_index: "0",
    }),
  ];
  for (let i = 0; i < n; i++) {
    out.push(
      ev("lease_created", {
        lease_uuid: leaseUuid(offset + i),
        tenant: TENANT,
        provider_uuid: provider,
        item_count: "1",
        total_rate_per_second: "2000upwr",
        pending_lease_count: String(i + 1),
        created_by: "tenant",
        sender: TENANT,
        msg_index: "0",
      }),
    );
  }
  return out;
}
