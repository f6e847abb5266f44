import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { Server } from "node:tls";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { readTls, type TlsFiles } from "./listener.ts";

/**
 * Picks up a renewed certificate without a restart: on SIGHUP (the caller's signal
 * handler calls `reload`) or when either file changes. The directories are watched, not
 * the files, so a certificate replaced by rename (as ACME clients do) is seen too; bursts
 * of change events are folded into one reload. A pair that cannot be read or does not
 * match keeps the current certificate in service and is logged: connections never fail
 * because a renewal was half-written.
 */
export const TLS_MIN_VERSION = "TLSv1.2";

export class TlsReloader {
  readonly #files: TlsFiles;
  readonly #server: Server;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #watchers: FSWatcher[] = [];
  #pending: (() => void) | undefined;
  /** Certificates put in service since start (for tests and logs). */
  reloads = 0;

  constructor(files: TlsFiles, server: Server, clock: Clock, logger: Logger) {
    this.#files = files;
    this.#server = server;
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Reads the pair again and serves it to new connections; false (and logged) when refused. */
  reload(): boolean {
    try {
      // The client CA (mTLS) is part of the context too: a reload keeps requiring it.
      this.#server.setSecureContext({ ...readTls(this.#files), minVersion: TLS_MIN_VERSION });
    } catch (err) {
      this.#logger.error({ err }, "TLS certificate reload refused; the current certificate stays in service");
      return false;
    }
    this.reloads++;
    this.#logger.info({ reloads: this.reloads }, "TLS certificate reloaded");
    return true;
  }

  watch(debounceMs = 200): void {
    const files = [
      this.#files.certFile,
      this.#files.keyFile,
      ...(this.#files.caFile ? [this.#files.caFile] : []),
    ];
    const names = new Set(files.map((f) => basename(f)));
    for (const dir of new Set(files.map((f) => dirname(f)))) {
      const w = watch(dir, { persistent: false }, (_event, name) => {
        if (name !== null && !names.has(String(name))) return;
        this.#pending?.();
        this.#pending = this.#clock.setTimer(debounceMs, () => {
          this.#pending = undefined;
          this.reload();
        });
      });
      w.on("error", (err) =>
        this.#logger.warn({ err }, "TLS certificate watch failed; SIGHUP still reloads"),
      );
      this.#watchers.push(w);
    }
  }

  close(): void {
    this.#pending?.();
    for (const w of this.#watchers.splice(0)) w.close();
  }
}
