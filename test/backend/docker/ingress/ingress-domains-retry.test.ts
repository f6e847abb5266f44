import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseDockerBackendConfig } from "../../../../src/backend/docker/config.ts";
import type { Ingress } from "../../../../src/backend/docker/ingress/index.ts";
import { pickFreePort } from "../../../support/index.ts";
import { activeIngress, startCaddy, type TestCaddy } from "./caddy-helper.ts";

/**
 * A custom domain the proxy could not take is not "in effect": the backend keeps the earlier
 * domains, so the caller's retry with the same ones is applied instead of being answered
 * "nothing changed". Real Caddy, killed while the domain is set; no Docker (a route needs
 * only an address to dial).
 */
const WILDCARD = "apps.fred.test";
const SKU = "0190f3a2-7c1e-7000-8000-00000000d001";
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000f2";
const DOMAIN = "shop.tenant.test";

describe("ingress: a custom domain whose apply failed is applied on the retry", () => {
  let caddy: TestCaddy;
  let ingress: Ingress;
  // The admin client's retry waits on unref'd clock timers; this handle keeps the test alive.
  let hold: NodeJS.Timeout;
  const routed = async () => JSON.stringify(await caddy.config("apps/http/servers")).includes(DOMAIN);

  before(async () => {
    hold = setInterval(() => {}, 60_000);
    caddy = await startCaddy();
    const config = parseDockerBackendConfig({
      host_address: "127.0.0.1",
      callback_secret: "x".repeat(40),
      sku_mapping: { [SKU]: "tiny" },
      sku_profiles: { tiny: { cpu_cores: 0.1, memory_mb: 32 } },
      ingress: {
        enabled: true,
        wildcard_domain: WILDCARD,
        admin_url: caddy.adminUrl,
        https_listen: `127.0.0.1:${await pickFreePort()}`,
        tls: "internal",
      },
    });
    assert.ok(config.ingress !== undefined);
    ingress = await activeIngress(config.ingress, "retry-test");
    await ingress.setLease(
      LEASE,
      [{ service: "app", index: 0, host: `app-0000000.${WILDCARD}`, dial: "127.0.0.1:9" }],
      [{ service_name: "app" }],
    );
  });
  after(async () => {
    await ingress?.close();
    await caddy?.stop();
    clearInterval(hold);
  });

  it("keeps the earlier domains when the proxy is down, and applies the same call once it is back", async () => {
    const items = [{ service_name: "app", custom_domain: DOMAIN }];
    await caddy.kill();
    await assert.rejects(ingress.setCustomDomains(LEASE, items));
    assert.equal(ingress.fqdns(LEASE).services.get("app"), `app-0000000.${WILDCARD}`, "not in effect");
    await caddy.restart(); // an empty config, as after a real proxy restart
    // The health loop's pass (called here instead of waiting its interval) rebuilds our
    // objects, with the earlier domains only.
    assert.equal(await ingress.checkProxy(), false, "the pass found the config gone and re-applied it");
    assert.equal(await routed(), false, "the failed domain was not re-applied by the pass");
    assert.equal(await ingress.setCustomDomains(LEASE, items), true, "the retry is a change");
    assert.equal(ingress.fqdns(LEASE).services.get("app"), DOMAIN);
    assert.ok(await routed(), "the domain's route is in Caddy's config");
    assert.equal(await ingress.setCustomDomains(LEASE, items), false, "now nothing changes");
  });
});
