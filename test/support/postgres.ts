import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { pickFreePort } from "./ports.ts";

/**
 * A real PostgreSQL cluster per test suite (Debian's `postgresql` package): `initdb` into
 * a temporary directory, a server on its own loopback port and socket directory, removed
 * by `stop()`. Nothing global is touched; the package's own cluster, if any, is left alone.
 *
 * CI installs the package and sets REQUIRE_POSTGRES=1, so there a missing server fails the
 * suites instead of skipping them.
 */

/** Debian puts the server binaries under /usr/lib/postgresql/<major>/bin, off PATH. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((d) => existsSync(join(root, d, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (majors[0] !== undefined) return join(root, majors[0], "bin");
  }
  try {
    const initdb = execFileSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).trim();
    return initdb === "" ? undefined : join(initdb, "..");
  } catch {
    return undefined;
  }
}

/** The `skip` option for suites that need a server: false where one is installed or required. */
export const skipWithoutPostgres: false | string =
  process.env.REQUIRE_POSTGRES === "1" || postgresBinDir() !== undefined
    ? false
    : "PostgreSQL is not installed (apt-get install postgresql)";

export interface TestPostgres {
  /** postgres://fred@127.0.0.1:<port>/<database> */
  url: string;
  port: number;
  dir: string;
  /** A fresh database on this server; its URL. */
  createDatabase(name: string): string;
  /** Stops the server (fast shutdown: sessions are cut); `start()` brings it back on the same port. */
  halt(): void;
  start(): void;
  /** Stops the server and removes its files. */
  stop(): void;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error("PostgreSQL is not installed (apt-get install postgresql)");
  const dir = mkdtempSync(join(tmpdir(), "fred-pg-"));
  const data = join(dir, "data");
  // initdb and the server refuse to run as root: as root, run them as Debian's postgres user.
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const ids = execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim();
    const gid = execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  const run = (tool: string, args: string[]) => {
    const cmd = asRoot ? "runuser" : join(bin, tool);
    const argv = asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args;
    try {
      return execFileSync(cmd, argv, {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000,
      });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string };
      throw new Error(`${tool} ${args.join(" ")} failed: ${e.stderr ?? ""}${e.stdout ?? ""}`);
    }
  };
  run("initdb", ["-D", data, "-U", "fred", "-A", "trust", "--no-sync", "-E", "UTF8"]);
  const port = await pickFreePort();
  // Loopback only, our own socket directory; fsync stays on (the store's durability is under test).
  writeFileSync(
    join(data, "postgresql.auto.conf"),
    [
      "listen_addresses = '127.0.0.1'",
      `port = ${port}`,
      `unix_socket_directories = '${dir}'`,
      "max_connections = 100",
      "shared_buffers = 32MB",
      "",
    ].join("\n"),
  );
  if (asRoot) execFileSync("chown", ["postgres:postgres", join(data, "postgresql.auto.conf")]);
  const log = join(dir, "server.log");
  const start = () => run("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "start"]);
  const halt = () => run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"]);
  start();
  const psql = (sql: string) =>
    execFileSync(
      join(bin, "psql"),
      ["-h", "127.0.0.1", "-p", String(port), "-U", "fred", "-d", "postgres", "-c", sql],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
  let stopped = false;
  return {
    url: `postgres://fred@127.0.0.1:${port}/postgres`,
    port,
    dir,
    createDatabase(name) {
      psql(`CREATE DATABASE "${name}"`);
      return `postgres://fred@127.0.0.1:${port}/${name}`;
    },
    halt,
    start,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        halt();
      } catch {
        // already down
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
