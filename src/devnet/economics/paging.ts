/**
 * Cursor arithmetic shared by provider-wide withdraw and the withdrawable query. The two use
 * different cursor conventions on purpose (as the chain does): MsgWithdraw resumes strictly
 * after the last processed lease; the query resumes at the first unread lease (inclusive).
 */
export const WITHDRAW_DEFAULT_LIMIT = 50n;
export const WITHDRAW_MAX_LIMIT = 100n;
export const WITHDRAW_MAX_KEY_BYTES = 64;

export interface WithdrawPage {
  page: string[];
  hasMore: boolean;
  /** UTF-8 of the last collected UUID when more remain, else empty. */
  nextKey: string;
}

/**
 * `orderedUuids` must be the provider's ACTIVE lease UUIDs in ascending order, or an iterator
 * positioned anywhere before `after`; only the first `limit + 1` qualifying entries are read.
 */
export function withdrawPage(orderedUuids: Iterable<string>, after: string, limit: number): WithdrawPage {
  const page: string[] = [];
  let hasMore = false;
  for (const uuid of orderedUuids) {
    if (after !== "" && uuid <= after) continue;
    if (page.length === limit) {
      hasMore = true;
      break;
    }
    page.push(uuid);
  }
  return { page, hasMore, nextKey: hasMore ? page[page.length - 1]! : "" };
}

export interface QueryPage<T> {
  items: T[];
  /** First key not returned (inclusive resume), empty at the end. */
  nextKey: string;
}

/** Inclusive-cursor page over ordered (key, item) pairs starting at `from` (empty = start). */
export function inclusivePage<T>(ordered: Iterable<[string, T]>, from: string, limit: number): QueryPage<T> {
  const items: T[] = [];
  for (const [key, item] of ordered) {
    if (from !== "" && key < from) continue;
    if (items.length === limit) return { items, nextKey: key };
    items.push(item);
  }
  return { items, nextKey: "" };
}

/** Resolves a PageRequest limit: 0 → default, above max → max. */
export function clampLimit(limit: bigint, defaultLimit: number, max: number): number {
  if (limit === 0n) return defaultLimit;
  return limit > BigInt(max) ? max : Number(limit);
}
