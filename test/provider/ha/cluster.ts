import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { type Launched, launchFred, portOf, until } from "../../support/index.ts";
import { startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { migrateStores, Stack } from "../e2e/stack.ts";

/**
 * providerd on PostgreSQL with hot standbys (issue #36), as processes, for the HA tests and
 * benchmarks: the e2e stack (devnet, mock backends, keyring, a placement store made by
 * `fred placement init`), a real PostgreSQL cluster the stores are moved into with `fred
 * placement migrate`, providerd instances sharing it, and a TCP front (what a load balancer
 * is) that gives each connection to the first instance in `front.targets` that accepts it,
 * so backends call back on one address whichever instance leads.
 */
export interface Health {
  role: "leader" | "standby";
  instance: string;
  leader: string | null;
}

export interface Front {
  url: string;
  /** The instances' API ports, in the order connections try them. */
  targets: number[];
  server: Server;
}

export class HaCluster {
  readonly stack = new Stack();
  server!: TestPostgres;
  databaseUrl = "";
  front!: Front;
  readonly instances: (Launched<{ url: string }> | undefined)[] = [];

  /** Starts everything but the instances; `configure` is the stack's (run once its SKUs are known). */
  async start(
    configure: (stack: Stack) => void | Promise<void> = () => {},
    mockEnv?: (stack: Stack) => Record<string, string>[],
    devnetArgs: string[] = [],
  ): Promise<void> {
    [this.server] = await Promise.all([startPostgres(), this.stack.start(mockEnv, configure, devnetArgs)]);
    this.databaseUrl = this.server.createDatabase("providerd_ha");
    await migrateStores(this.stack.configPath, this.databaseUrl);
    this.front = await startFront();
  }

  /** Instance `i`'s config: the stack's, with the stores in PostgreSQL and callbacks on the front. */
  writeInstanceConfig(i: number): string {
    const base = parse(readFileSync(this.stack.configPath, "utf8")) as Record<string, unknown>;
    delete base.placement_store_db_path;
    delete base.payload_store_db_path;
    const stateDir = join(this.stack.dir, `instance-${i}`);
    mkdirSync(stateDir, { recursive: true });
    const path = join(stateDir, "providerd.yaml");
    writeFileSync(
      path,
      stringify({
        ...base,
        database_url: this.databaseUrl,
        state_dir: stateDir,
        api_listen_addr: "127.0.0.1:0",
        callback_base_url: this.front.url,
        operator_listen_addr: "",
      }),
    );
    return path;
  }

  async launch(i: number): Promise<Launched<{ url: string }>> {
    const launched = await launchFred<{ url: string }>(["providerd", "-c", this.writeInstanceConfig(i)], {
      label: `providerd-${i}`,
      env: { FRED_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn" },
      readyTimeoutMs: 120_000,
    });
    this.instances[i] = launched;
    this.front.targets[i] = portOf(launched.ready.url);
    return launched;
  }

  url(i: number): string {
    return this.instances[i]!.ready.url;
  }

  /** Instance `i`'s /health (its role, whether or not it is ready yet); `ready`: its /readyz, when 200. */
  async health(i: number, ready = false): Promise<Health | undefined> {
    try {
      const res = await fetch(`${this.url(i)}/${ready ? "readyz" : "health"}`, {
        signal: AbortSignal.timeout(3_000),
      });
      return res.status === 200 ? ((await res.json()) as Health) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Until instance `i` has `role` (a leader may still be recovering), polling every `intervalMs`. */
  async waitRole(i: number, role: Health["role"], timeoutMs = 60_000, intervalMs = 100): Promise<Health> {
    return this.#wait(i, false, role, timeoutMs, intervalMs);
  }

  /** Until instance `i` is ready (/readyz 200) with `role`. */
  async waitReady(i: number, role: Health["role"], timeoutMs = 120_000): Promise<Health> {
    return this.#wait(i, true, role, timeoutMs, 200);
  }

  async #wait(i: number, ready: boolean, role: Health["role"], timeoutMs: number, intervalMs: number) {
    let seen: Health | undefined;
    await until(
      async () => {
        seen = await this.health(i, ready);
        return seen?.role === role;
      },
      `instance ${i} ${ready ? "ready as" : "has the role"} ${role}`,
      { timeoutMs, intervalMs, context: () => `${JSON.stringify(seen)}\n${this.instances[i]!.logTail()}` },
    );
    return seen!;
  }

  /** The first running instance other than `i`. */
  otherThan(i: number): number {
    const j = this.instances.findIndex((p, k) => k !== i && p?.running() === true);
    if (j < 0) throw new Error(`no instance runs besides ${i}`);
    return j;
  }

  /** Until one of `among` leads (by /health), polling each every 100 ms; its index and health. */
  async waitLeaderAmong(among: readonly number[], timeoutMs = 60_000): Promise<[number, Health]> {
    let found: [number, Health] | undefined;
    await until(
      async () => {
        for (const i of among) {
          const h = await this.health(i);
          if (h?.role === "leader") found = [i, h];
        }
        return found !== undefined;
      },
      `one of instances ${among.join(", ")} leads`,
      {
        timeoutMs,
        intervalMs: 100,
        context: () => among.map((i) => this.instances[i]!.logTail()).join("\n"),
      },
    );
    return found!;
  }

  /** Which instance leads now (by its own /readyz). */
  async leaderIndex(): Promise<number> {
    for (let i = 0; i < this.instances.length; i++) {
      if (this.instances[i]?.running() && (await this.health(i))?.role === "leader") return i;
    }
    throw new Error("no instance leads");
  }

  async close(): Promise<void> {
    await Promise.all(this.instances.map((p) => p?.stop()));
    this.front?.server.close();
    await this.stack.close();
    this.server?.stop();
  }
}

async function startFront(): Promise<Front> {
  const front: Front = { url: "", targets: [], server: createServer() };
  front.server.on("connection", (client: Socket) => {
    client.pause();
    const tryTarget = (i: number): void => {
      if (i >= front.targets.length) {
        client.destroy();
        return;
      }
      const upstream = connect(front.targets[i]!, "127.0.0.1");
      upstream.once("error", () => tryTarget(i + 1));
      upstream.once("connect", () => {
        upstream.removeAllListeners("error");
        client.pipe(upstream).pipe(client);
        client.resume();
        const end = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on("error", end);
        upstream.on("error", end);
      });
    };
    tryTarget(0);
  });
  await new Promise<void>((resolve) => front.server.listen(0, "127.0.0.1", resolve));
  front.url = `http://127.0.0.1:${(front.server.address() as { port: number }).port}`;
  return front;
}
