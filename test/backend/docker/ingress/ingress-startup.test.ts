import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { IngressConfig } from "../../../../src/backend/docker/ingress/config.ts";
import { Ingress } from "../../../../src/backend/docker/ingress/index.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { pickFreePort } from "../../../support/index.ts";
import { startCaddy } from "./caddy-helper.ts";

/** Startup refusals against a real Caddy: a proxy that does not answer, another ask gate. */

const config = (adminUrl: string, httpsListen: string): IngressConfig => ({
  wildcardDomain: "apps.fred.test",
  adminUrl,
  httpsListen,
  tls: { kind: "internal" },
  askHost: "127.0.0.1",
  askPort: 0,
  healthIntervalMs: 60_000,
  dnsResolvers: ["127.0.0.1:53"],
  dnsQuorum: 1,
  dnsCheckDisabled: false,
});
const make = (adminUrl: string, httpsListen = "127.0.0.1:1") =>
  new Ingress({
    config: config(adminUrl, httpsListen),
    backendName: "b1",
    clock: systemClock,
    log: createLogger("t", "silent"),
  });

describe("ingress startup", () => {
  // The admin client's retry waits on unref'd clock timers; in a daemon the listeners keep
  // the process alive, here this handle does.
  let hold: NodeJS.Timeout;
  before(() => {
    hold = setInterval(() => {}, 60_000);
  });
  after(() => clearInterval(hold));

  it("refuses to start when Caddy's admin API does not answer", async () => {
    const ingress = make(`http://127.0.0.1:${await pickFreePort()}`);
    await assert.rejects(ingress.start(), { code: "ERR_INGRESS_PROXY" });
    await ingress.close();
  });

  it("refuses to start when another on-demand ask is configured, and changes nothing", async () => {
    const foreign = { apps: { tls: { automation: { on_demand: { ask: "http://127.0.0.1:1/theirs" } } } } };
    const caddy = await startCaddy(foreign);
    try {
      const before = JSON.stringify(await caddy.config());
      const ingress = make(caddy.adminUrl);
      await assert.rejects(ingress.start(), { code: "ERR_INGRESS_CONFLICT" });
      await ingress.close();
      assert.equal(JSON.stringify(await caddy.config()), before);
    } finally {
      await caddy.stop();
    }
  });

  it("adopts its own ask from an earlier run and writes only its own objects", async () => {
    const other = {
      apps: { http: { servers: { theirs: { listen: [`127.0.0.1:${await pickFreePort()}`] } } } },
    };
    const caddy = await startCaddy(other);
    const ours = `127.0.0.1:${await pickFreePort()}`;
    try {
      const first = make(caddy.adminUrl, ours);
      await first.start();
      await first.activate();
      await first.close();
      const second = make(caddy.adminUrl, ours);
      await second.start();
      await second.activate();
      const cfg = (await caddy.config()) as {
        apps: {
          http: { servers: Record<string, unknown> };
          tls: { automation: { on_demand: { ask: string } } };
        };
      };
      assert.deepEqual(Object.keys(cfg.apps.http.servers).sort(), ["fred_b1", "theirs"]);
      assert.deepEqual(cfg.apps.http.servers.theirs, other.apps.http.servers.theirs);
      assert.equal(cfg.apps.tls.automation.on_demand.ask, second.askUrl);
      await second.close();
    } finally {
      await caddy.stop();
    }
  });
});
