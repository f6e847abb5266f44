/**
 * The retained fields of a backend's provision record (`GET /provisions/{uuid}` answering
 * status `retained`), reduced to what a tenant may see and shaped as the tenant API sends
 * them: the restore shape (`items`: service_name, sku, quantity), the next-step hint, the
 * recorded partition, and the RFC 3339 deadline when an age limit applies. A field the
 * backend sent in another shape is dropped, never relayed as it came.
 */
export interface RetainedItem {
  service_name: string;
  sku: string;
  quantity: number;
}

export interface RetainedFields {
  items?: RetainedItem[];
  restore_hint?: string;
  partition?: string;
  retained_until?: string;
}

const MAX_TEXT = 512;
const MAX_ITEMS = 64;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Bounded text without control characters; undefined when empty or not a string. */
function text(v: unknown): string | undefined {
  if (typeof v !== "string") return undefined;
  const flat = v.replace(/\p{Cc}/gu, " ").trim();
  if (flat === "") return undefined;
  return flat.length > MAX_TEXT ? flat.slice(0, MAX_TEXT) : flat;
}

function item(v: unknown): RetainedItem | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const sku = text(o.sku);
  const quantity = o.quantity;
  if (sku === undefined || typeof quantity !== "number" || !Number.isSafeInteger(quantity) || quantity < 1)
    return undefined;
  return { service_name: text(o.service_name) ?? "", sku, quantity };
}

export function retainedFields(record: Record<string, unknown>): RetainedFields {
  const out: RetainedFields = {};
  if (Array.isArray(record.items)) {
    const items = record.items.slice(0, MAX_ITEMS).map(item);
    if (items.length > 0 && items.every((i) => i !== undefined)) out.items = items as RetainedItem[];
  }
  const hint = text(record.restore_hint);
  if (hint !== undefined) out.restore_hint = hint;
  const partition = text(record.partition);
  if (partition !== undefined) out.partition = partition;
  const until = record.retained_until;
  if (typeof until === "string" && RFC3339.test(until) && !Number.isNaN(Date.parse(until)))
    out.retained_until = until;
  return out;
}
