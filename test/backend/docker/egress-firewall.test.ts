import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, describe, it } from "node:test";
import pino from "pino";
import { Registry } from "prom-client";
import { EgressFirewall, type EgressFirewallOptions } from "../../../src/backend/docker/egress-firewall.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerSkip } from "../../support/docker.ts";

/**
 * What the backend does when the egress rules cannot be installed (here: no nft binary):
 * production refuses the start with a message that says what to install, development runs
 * on with a WARN and the firewall does nothing after. And with nft present, a start loads
 * an (empty) table for a deployment without networks, and `sync` finds nothing to change.
 */
const skip = await dockerSkip();

function firewall(over: Partial<EgressFirewallOptions>): EgressFirewall {
  return new EgressFirewall({
    docker: connectDocker("unix:///var/run/docker.sock"),
    clock: systemClock,
    log: createLogger("egress-test", process.env.TEST_LOG_LEVEL ?? "silent"),
    storageId: randomUUID(),
    policy: { allow: [], deny: [] },
    sweepIntervalMs: 3_600_000,
    productionMode: false,
    ...over,
  });
}

const nft = (args: string[]) =>
  new Promise<number>((resolve) => execFile("nft", args, (err) => resolve(err ? 1 : 0)));

describe("docker backend: egress firewall start", { skip }, () => {
  const made: EgressFirewall[] = [];
  const signal = new AbortController().signal;
  after(async () => {
    for (const f of made) {
      await f.close();
      await nft(["delete", "table", "inet", f.table]);
    }
  });

  it("production_mode: rules that cannot be installed refuse the start, saying what is missing", async () => {
    const f = firewall({ productionMode: true, nftBin: "/nonexistent/nft" });
    made.push(f);
    await assert.rejects(f.start(signal), (err: unknown) => {
      assert.ok(isFredError(err, "ERR_EGRESS_FIREWALL"), String(err));
      assert.match(err.message, /production_mode requires them/);
      assert.match(err.message, /nftables/);
      return true;
    });
  });

  it("development: a WARN, no rules, and sync does nothing from then on", async () => {
    const registry = new Registry();
    const f = firewall({ nftBin: "/nonexistent/nft", registry });
    made.push(f);
    await f.start(signal);
    assert.equal(f.state, "unavailable");
    assert.equal(await f.sync(signal), "skipped");
    assert.match(await registry.metrics(), /^fred_egress_enforced 0$/m);
    assert.match(await registry.metrics(), /^fred_egress_apply_failures_total 1$/m);
  });

  it("with nft: the start loads the table, a second look finds it unchanged; a private resolver is named", async () => {
    const registry = new Registry();
    const dir = mkdtempSync(join(tmpdir(), "fred-egress-resolv-"));
    const resolvConfPath = join(dir, "resolv.conf");
    writeFileSync(resolvConfPath, "nameserver 10.255.255.53\nnameserver 127.0.0.53\n");
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const f = firewall({ registry, resolvConfPath, log: pino({ level: "warn" }, sink) });
    made.push(f);
    await f.start(signal);
    assert.equal(f.state, "enforcing");
    assert.equal(await nft(["list", "table", "inet", f.table]), 0, "the table is in the kernel");
    assert.equal(await f.sync(signal), "unchanged");
    assert.match(await registry.metrics(), /^fred_egress_rulesets_applied_total 1$/m);
    const warning = lines.find((l) => l.includes("DNS resolvers"));
    assert.ok(warning, lines.join(""));
    assert.deepEqual(JSON.parse(warning).resolvers, ["10.255.255.53"]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("rules that stop loading after the start make it a health problem until a load succeeds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-egress-nft-"));
    const broken = join(dir, "broken");
    const nftBin = join(dir, "nft");
    // The real nft, except while the `broken` file exists (as if nftables went away).
    writeFileSync(
      nftBin,
      `#!/bin/sh\nif [ -e ${broken} ]; then echo "nft: gone" >&2; exit 1; fi\nexec nft "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const f = firewall({ nftBin });
    made.push(f);
    await f.start(signal);
    assert.equal(f.problem(), undefined);
    writeFileSync(broken, "");
    assert.equal(await nft(["delete", "table", "inet", f.table]), 0);
    await assert.rejects(f.sweep(signal));
    assert.match(f.problem() ?? "", /^egress firewall rules cannot be loaded: .*nft: gone/);
    rmSync(broken);
    assert.equal(await f.sweep(signal), "repaired");
    assert.equal(f.problem(), undefined);
    rmSync(dir, { recursive: true, force: true });
  });
});
