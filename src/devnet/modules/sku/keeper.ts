/**
 * x/sku state: providers and SKUs stored as protobuf under their UUIDs, plus the secondary
 * indexes the queries walk (by address, by provider, by active flag), and the UUID sequences.
 */
import { Provider, SKU, SkuParams, toBytes } from "../../../chain/proto/index.ts";
import { deterministicUuidV7, UUID_NAMESPACE } from "../../economics/uuidv7.ts";
import type { ExecContext, KVStore, QueryContext } from "../../module.ts";
import { SKU_MODULE, type SkuKeeper } from "./types.ts";

const EMPTY = new Uint8Array();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const keys = {
  params: "params",
  provider: (uuid: string) => `prov/${uuid}`,
  providerByAddress: (address: string, uuid = "") => `provaddr/${address}/${uuid}`,
  providerActive: (uuid = "") => `provact/${uuid}`,
  sku: (uuid: string) => `sku/${uuid}`,
  skuByProvider: (provider: string, uuid = "") => `skuprov/${provider}/${uuid}`,
  skuActive: (uuid = "") => `skuact/${uuid}`,
  skuByProviderActive: (provider: string, uuid = "") => `skuprovact/${provider}/${uuid}`,
  seq: (name: string) => `seq/${name}`,
};

export function readSeq(store: KVStore, name: string): bigint {
  const raw = store.get(keys.seq(name));
  return raw === undefined ? 0n : BigInt(decoder.decode(raw));
}

export function writeSeq(store: KVStore, name: string, value: bigint): void {
  store.set(keys.seq(name), encoder.encode(value.toString()));
}

/** Allocates the next chain UUID of a namespace (sequence starts at 0). */
export function allocateUuid(ctx: ExecContext, store: KVStore, namespace: string): string {
  const seq = readSeq(store, namespace);
  writeSeq(store, namespace, seq + 1n);
  return deterministicUuidV7({
    blockTimeMs: ctx.block.timeMs,
    headerHash: ctx.block.hash,
    chainId: ctx.block.chainId,
    namespace,
    sequence: seq,
  });
}

function writeProvider(store: KVStore, next: Provider, prev: Provider | undefined): void {
  if (prev !== undefined) {
    if (prev.address !== next.address) store.delete(keys.providerByAddress(prev.address, prev.uuid));
    if (prev.active && !next.active) store.delete(keys.providerActive(prev.uuid));
  }
  store.set(keys.provider(next.uuid), toBytes(Provider, next));
  store.set(keys.providerByAddress(next.address, next.uuid), EMPTY);
  if (next.active) store.set(keys.providerActive(next.uuid), EMPTY);
}

function writeSku(store: KVStore, next: SKU, prev: SKU | undefined): void {
  if (prev?.active && !next.active) {
    store.delete(keys.skuActive(prev.uuid));
    store.delete(keys.skuByProviderActive(prev.providerUuid, prev.uuid));
  }
  store.set(keys.sku(next.uuid), toBytes(SKU, next));
  store.set(keys.skuByProvider(next.providerUuid, next.uuid), EMPTY);
  if (next.active) {
    store.set(keys.skuActive(next.uuid), EMPTY);
    store.set(keys.skuByProviderActive(next.providerUuid, next.uuid), EMPTY);
  }
}

export function createSkuKeeper(): SkuKeeper {
  const store = (ctx: ExecContext | QueryContext) => ctx.store(SKU_MODULE);
  const getProvider = (ctx: ExecContext | QueryContext, uuid: string) => {
    const raw = store(ctx).get(keys.provider(uuid));
    return raw === undefined ? undefined : Provider.decode(raw);
  };
  const getSku = (ctx: ExecContext | QueryContext, uuid: string) => {
    const raw = store(ctx).get(keys.sku(uuid));
    return raw === undefined ? undefined : SKU.decode(raw);
  };
  return {
    getParams(ctx) {
      const raw = store(ctx).get(keys.params);
      return raw === undefined ? { allowedList: [] } : SkuParams.decode(raw);
    },
    getProvider,
    getSku,
    addProvider(ctx, fields) {
      const s = store(ctx);
      const provider = { ...fields, uuid: allocateUuid(ctx, s, UUID_NAMESPACE.provider) };
      writeProvider(s, provider, undefined);
      return provider;
    },
    addSku(ctx, fields) {
      const s = store(ctx);
      const sku = { ...fields, uuid: allocateUuid(ctx, s, UUID_NAMESPACE.sku) };
      writeSku(s, sku, undefined);
      return sku;
    },
    putProvider(ctx, provider) {
      writeProvider(store(ctx), provider, getProvider(ctx, provider.uuid));
    },
    putSku(ctx, sku) {
      writeSku(store(ctx), sku, getSku(ctx, sku.uuid));
    },
    activeSkusOf(ctx, providerUuid, limit) {
      const out: SKU[] = [];
      const prefix = keys.skuByProviderActive(providerUuid);
      for (const [k] of store(ctx).iterate({ prefix, limit })) {
        const sku = getSku(ctx, k.slice(prefix.length));
        if (sku !== undefined) out.push(sku);
      }
      return out;
    },
  };
}

export function setSkuParams(ctx: ExecContext, params: SkuParams): void {
  ctx.store(SKU_MODULE).set(keys.params, toBytes(SkuParams, params));
}
