import { z } from "zod";
import {
  DEFAULT_SERVICE_NAME,
  type Manifest,
  type Problem,
  problemsFromIssues,
  problemWording,
  toPointer,
} from "./manifest/index.ts";
import { isCanonicalUuid } from "./uuid.ts";

/**
 * Lease items as the chain stores them, `[{sku_uuid, quantity, service_name?,
 * custom_domain?}]`, and the rules a backend applies before deploying a manifest onto
 * them (fred-wire §2.7 notes, §3.4; ledger.md §4.3):
 *
 * - either no item is named (then exactly one item, which is service "app") or every
 *   item is named; names are DNS labels and unique;
 * - quantity is 1 … 1e9; sku_uuid is a canonical lowercase UUID of any version;
 * - a manifest's services and the items' names match 1:1.
 *
 * Public surface: `parseLeaseItems`, `itemServiceNames`, `matchManifestToItems`.
 */

export const MAX_ITEM_QUANTITY = 1_000_000_000;
/** The chain's hard limit on items per lease. */
export const MAX_LEASE_ITEMS = 100;

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Custom-domain syntax as the chain enforces it: lowercase FQDN, ≤ 253 bytes, ≥ 2 labels. */
export function isValidCustomDomain(domain: string): boolean {
  if (domain.length > 253) return false;
  const labels = domain.split(".");
  if (labels.length < 2) return false;
  if (!labels.every((label) => DNS_LABEL.test(label))) return false;
  return !/^[0-9]+$/.test(labels[labels.length - 1] as string);
}

/** uint64 on chain: JSON integers from our tools, decimal strings from cosmos REST/amino JSON. */
const WHOLE = "quantity must be a whole number";
const quantitySchema = z
  .union([z.int({ error: WHOLE }), z.string().regex(/^[0-9]+$/, { error: WHOLE })], { error: WHOLE })
  .transform((value) => Number(value))
  .refine((n) => Number.isInteger(n) && n >= 1 && n <= MAX_ITEM_QUANTITY, {
    error: `quantity must be between 1 and ${MAX_ITEM_QUANTITY}`,
  });

export const leaseItemSchema = z.strictObject({
  sku_uuid: z.string().refine(isCanonicalUuid, { error: "sku_uuid must be a canonical lowercase UUID" }),
  quantity: quantitySchema,
  /** Empty or absent means unnamed. */
  service_name: z
    .string()
    .refine((name) => name === "" || DNS_LABEL.test(name), {
      error: "service_name must be a DNS label: 1-63 of a-z, 0-9 and '-', not starting or ending with '-'",
    })
    .optional(),
  /** Empty or absent means none. */
  custom_domain: z
    .string()
    .refine((domain) => domain === "" || isValidCustomDomain(domain), {
      error: "custom_domain must be a lowercase fully qualified domain name",
    })
    .optional(),
  /** Present in chain query output; carried along so chain JSON can be pasted as is. */
  locked_price: z.strictObject({ denom: z.string(), amount: z.string() }).optional(),
});

export type LeaseItem = z.output<typeof leaseItemSchema>;

function inItems(problems: Problem[]): Problem[] {
  return problems.map((problem) => ({ ...problem, document: "items" }));
}

function isNamed(item: { service_name?: string | undefined }): boolean {
  return item.service_name !== undefined && item.service_name !== "";
}

/** Naming-mode rules over the whole list; pointers are into the items array. */
function itemSetProblems(items: readonly LeaseItem[]): Problem[] {
  const problems: Problem[] = [];
  const named = items.filter(isNamed).length;
  if (named > 0 && named < items.length) {
    items.forEach((item, index) => {
      if (!isNamed(item))
        problems.push({ path: toPointer([index]), message: "items must be either all named or all unnamed" });
    });
  } else if (named === 0 && items.length > 1) {
    problems.push({ path: "", message: "more than one unnamed item: every item needs a service_name" });
  }
  problems.push(...duplicateNameProblems(items));
  return problems;
}

function duplicateNameProblems(items: readonly LeaseItem[]): Problem[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (!isNamed(item)) return;
    const name = item.service_name as string;
    if (seen.has(name))
      problems.push({
        path: toPointer([index, "service_name"]),
        message: `duplicate service_name ${JSON.stringify(name)}`,
      });
    seen.add(name);
  });
  return problems;
}

export type ParseLeaseItemsResult = { ok: true; items: LeaseItem[] } | { ok: false; problems: Problem[] };

/** Validates lease items (already decoded from JSON); problems point into the array. */
export function parseLeaseItems(input: unknown): ParseLeaseItemsResult {
  const schema = z
    .array(leaseItemSchema)
    .min(1, { error: "a lease has at least one item" })
    .max(MAX_LEASE_ITEMS, { error: `a lease has at most ${MAX_LEASE_ITEMS} items` });
  const result = schema.safeParse(input, { error: problemWording });
  if (!result.success) return { ok: false, problems: inItems(problemsFromIssues(result.error.issues)) };
  const problems = inItems(itemSetProblems(result.data));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, items: result.data };
}

/** The service each item deploys: its name, or "app" for the one unnamed item. */
export function itemServiceNames(items: readonly LeaseItem[]): string[] {
  return items.map((item) => (isNamed(item) ? (item.service_name as string) : DEFAULT_SERVICE_NAME));
}

/**
 * Problems with deploying `manifest` onto `items`: each side must name the same services.
 * Manifest-side pointers are into the manifest as written (`/services/<name>`, or "" for
 * a flat one); item-side problems are marked `document: "items"` and point into the array.
 */
export function matchManifestToItems(manifest: Manifest, items: readonly LeaseItem[]): Problem[] {
  const problems = inItems(duplicateNameProblems(items));
  const names = itemServiceNames(items);
  const itemNames = new Set(names);
  for (const service of Object.keys(manifest.services)) {
    if (!itemNames.has(service)) {
      problems.push({
        path: manifest.format === "flat" ? "" : toPointer(["services", service]),
        message: `manifest service ${JSON.stringify(service)} has no matching lease item`,
      });
    }
  }
  names.forEach((name, index) => {
    if (!Object.hasOwn(manifest.services, name)) {
      problems.push({
        path: toPointer([index]),
        document: "items",
        message: `lease item service ${JSON.stringify(name)} has no matching manifest service`,
      });
    }
  });
  return problems;
}
