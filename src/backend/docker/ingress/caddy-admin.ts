import { Client } from "undici";
import { retry } from "../../../core/async/index.ts";
import type { Clock } from "../../../core/clock.ts";
import { FredError } from "../../../core/errors.ts";
import { adminUrlProblem } from "./config.ts";

/**
 * Caddy's admin API (https://caddyserver.com/docs/api), only the verbs ingress needs:
 * read a config path, create/replace/delete at a path or at an `@id`. The URL is checked
 * again here (loopback http or a unix socket), so no caller can point it elsewhere.
 * Every answer other than 2xx becomes ERR_INGRESS_PROXY with Caddy's text for the log.
 * Caddy restarts its admin listener on every config load, so a request right after a
 * change can meet a reset connection: transport failures get a few quick tries.
 */

const REQUEST_TIMEOUT_MS = 10_000;

export class CaddyAdmin {
  readonly #client: Client;
  readonly #origin: string;
  readonly #clock: Clock;

  constructor(adminUrl: string, clock: Clock) {
    this.#clock = clock;
    const problem = adminUrlProblem(adminUrl);
    if (problem !== undefined) throw new FredError("ERR_CONFIG", `ingress.admin_url refused: ${problem}`);
    const socket = /^unix:?\/?\/?(\/.*)$/.exec(adminUrl)?.[1];
    // Caddy checks the Host/Origin of admin requests; over a socket any fixed host passes.
    this.#origin = socket !== undefined ? "http://localhost" : new URL(adminUrl).origin;
    this.#client = new Client(this.#origin, {
      ...(socket !== undefined ? { socketPath: socket } : {}),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
  }

  #call(method: "GET" | "PUT" | "POST" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<unknown> {
    return retry(() => this.#once(method, path, body), {
      clock: this.#clock,
      attempts: 5,
      backoff: { initialMs: 50, maxMs: 500 },
      retryable: (err) => (err as { status?: number }).status === undefined,
    });
  }

  async #once(
    method: "GET" | "PUT" | "POST" | "PATCH" | "DELETE",
    path: string,
    body?: unknown,
  ): Promise<unknown> {
    let res: Awaited<ReturnType<Client["request"]>>;
    try {
      res = await this.#client.request({
        method,
        path,
        // One connection per call: admin calls are rare, and a restarted Caddy must not
        // meet a kept-alive socket of its previous life.
        reset: true,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new FredError("ERR_INGRESS_PROXY", `caddy admin ${method} ${path}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw Object.assign(
        new FredError(
          "ERR_INGRESS_PROXY",
          `caddy admin ${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`,
          {
            retryable: res.statusCode >= 500,
          },
        ),
        { status: res.statusCode },
      );
    }
    return text.trim() === "" ? null : JSON.parse(text);
  }

  /** The config value at `/config/<path>`; `null` when nothing is there. */
  get(path: string): Promise<unknown> {
    return this.#call("GET", `/config/${path}`);
  }

  getById(id: string): Promise<unknown> {
    return this.#call("GET", `/id/${encodeURIComponent(id)}`).catch((err) => {
      if ((err as { status?: number }).status === 404) return null;
      throw err;
    });
  }

  /** Creates (PUT: inserts into an array at the index) the value at a config path. */
  async put(path: string, value: unknown): Promise<void> {
    await this.#call("PUT", `/config/${path}`, value);
  }

  /** Replaces an existing value at a config path. */
  async patch(path: string, value: unknown): Promise<void> {
    await this.#call("PATCH", `/config/${path}`, value);
  }

  /** Replaces the object carrying `@id`. */
  async patchById(id: string, value: unknown): Promise<void> {
    await this.#call("PATCH", `/id/${encodeURIComponent(id)}`, value);
  }

  /** Appends to an array at a config path. */
  async append(path: string, value: unknown): Promise<void> {
    await this.#call("POST", `/config/${path}`, value);
  }

  /** Removes the object carrying `@id`; absent is success. */
  async deleteById(id: string): Promise<void> {
    await this.#call("DELETE", `/id/${encodeURIComponent(id)}`).catch((err) => {
      if ((err as { status?: number }).status === 404) return;
      throw err;
    });
  }

  /**
   * Makes sure every object on the way to `path` exists (Caddy refuses to create a key under
   * a missing parent), creating empty objects where needed. Never replaces what is there.
   */
  async ensureObject(path: string): Promise<void> {
    const parts = path.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const here = parts.slice(0, i).join("/");
      if ((await this.get(here)) === null)
        await this.put(here, {}).catch((err) => this.#unlessThere(here, err));
    }
  }

  /**
   * A create whose first try met a reset connection may have been applied already (Caddy
   * resets admin connections when it loads a config), so its retry answers "key already
   * exists": the object being there now is the success the caller wanted.
   */
  async #unlessThere(path: string, err: unknown): Promise<void> {
    if ((await this.get(path)) === null) throw err;
  }

  /** Creates the value at a config path, or replaces it when it is already there. */
  async putOrPatch(path: string, value: unknown): Promise<void> {
    if ((await this.get(path)) === null) {
      try {
        await this.put(path, value);
        return;
      } catch (err) {
        await this.#unlessThere(path, err);
      }
    }
    await this.patch(path, value);
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}
