/**
 * One websocket client's subscriptions. Events are pushed with the subscribe request's id
 * and `result.query` set to the exact subscribed string; the acknowledgement is `{}`.
 */
import type { BusEvent, DevnetNode } from "../node.ts";
import { RpcError } from "../node.ts";
import { type Condition, matches, parseQuery, QuerySyntaxError } from "../query-lang.ts";
import { invalidParams, type Params } from "./params.ts";

const MAX_SUBSCRIPTIONS = 100;

type Id = string | number | null;

interface Subscription {
  id: Id;
  conditions: Condition[];
}

export class SubscriptionSession {
  readonly #subs = new Map<string, Subscription>();
  readonly #unsubscribe: () => void;

  constructor(node: DevnetNode, send: (msg: unknown) => void) {
    this.#unsubscribe = node.subscribe((event: BusEvent) => {
      for (const [query, sub] of this.#subs) {
        if (!matches(sub.conditions, event.events)) continue;
        send({ jsonrpc: "2.0", id: sub.id, result: { query, data: event.data, events: event.events } });
      }
    });
  }

  handle(id: Id, method: string, params: Params): unknown {
    if (method === "unsubscribe_all") {
      if (this.#subs.size === 0) throw new RpcError(-32603, "Internal error", "subscription not found");
      this.#subs.clear();
      return {};
    }
    const query = params.query;
    if (typeof query !== "string")
      throw invalidParams("error converting json params to arguments: query must be a string");
    if (method === "unsubscribe") {
      if (!this.#subs.delete(query)) throw new RpcError(-32603, "Internal error", "subscription not found");
      return {};
    }
    if (this.#subs.has(query)) throw new RpcError(-32603, "Internal error", "already subscribed");
    if (this.#subs.size >= MAX_SUBSCRIPTIONS) {
      throw new RpcError(
        -32603,
        "Internal error",
        `max_subscriptions_per_client ${MAX_SUBSCRIPTIONS} reached`,
      );
    }
    let conditions: Condition[];
    try {
      conditions = parseQuery(query);
    } catch (err) {
      if (err instanceof QuerySyntaxError)
        throw new RpcError(-32603, "Internal error", `failed to parse query: ${err.message}`);
      throw err;
    }
    this.#subs.set(query, { id, conditions });
    return {};
  }

  close(): void {
    this.#subs.clear();
    this.#unsubscribe();
  }
}
