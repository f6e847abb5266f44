import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { DockerSubstrate } from "../../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../../src/backend/docker/engine.ts";
import { Ingress } from "../../../../src/backend/docker/ingress/index.ts";
import type { WorkloadSpec } from "../../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { dockerSkip, engineIdShift } from "../../../support/docker.ts";
import { pickFreePort } from "../../../support/index.ts";
import { substrateConfig, workloadSpec } from "../substrate-helper.ts";
import { httpsServed, startCaddy, type TestCaddy } from "./caddy-helper.ts";

/**
 * Routes follow the substrate's ready path in maintenance too: a restart re-points the
 * hostname at the recreated container, an update at the next release's container and port.
 */
const skip = await dockerSkip({ images: ["httpd"] });
const NAME = "ing-maint";

describe("docker substrate: ingress routes through restart and update", { skip }, () => {
  const storageId = randomUUID();
  const signal = new AbortController().signal;
  let caddy: TestCaddy;
  let ingress: Ingress;
  let substrate: DockerSubstrate;
  let httpsPort: number;
  const made: WorkloadSpec[] = [];
  const hold = setInterval(() => {}, 60_000);
  const httpd = { image: "fred-test/httpd:1", ports: { "8080/tcp": {} } };
  const served = (host: string) => httpsServed(host, httpsPort, caddy.caCert(NAME));
  const dials = async () =>
    JSON.stringify(await caddy.config(`apps/http/servers/fred_${NAME}/routes`)).match(/"dial":"[^"]+"/g) ??
    [];

  before(async () => {
    caddy = await startCaddy();
    httpsPort = await pickFreePort();
    const config = substrateConfig(undefined, {
      name: NAME,
      volume_filesystem: "none",
      ingress: {
        enabled: true,
        wildcard_domain: "apps.fred.test",
        admin_url: caddy.adminUrl,
        https_listen: `127.0.0.1:${httpsPort}`,
        health_interval: "1h",
      },
    });
    const log = createLogger("test-ingress", "silent");
    ingress = new Ingress({
      config: config.ingress as NonNullable<typeof config.ingress>,
      backendName: NAME,
      clock: systemClock,
      log,
    });
    await ingress.start();
    await ingress.activate();
    const ids = await engineIdShift();
    substrate = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log,
      volumes: undefined,
      ids,
      ingress,
    });
  });
  after(async () => {
    for (const s of made) await substrate?.destroyLease(s.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    await ingress?.close();
    await caddy?.stop();
    clearInterval(hold);
  });

  it("restart and update keep the hostname and re-point it at the serving release", async () => {
    const spec = workloadSpec({
      storageId,
      services: { app: httpd },
      profile: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 },
    });
    made.push(spec);
    await substrate.create(spec, signal);
    await substrate.start(spec, signal);
    const fqdn = ingress.fqdns(spec.leaseUuid).services.get("app") as string;
    assert.deepEqual(await served(fqdn), { status: 200, body: "fred-test-httpd\n" });

    await substrate.restart(spec, signal);
    // Ready means the container runs; httpd may bind its port a moment later (502 until then).
    assert.deepEqual(await served(fqdn), { status: 200, body: "fred-test-httpd\n" });
    assert.equal((await dials()).length, 1);

    const next: WorkloadSpec = {
      ...spec,
      release: 2,
      manifest: {
        services: {
          app: {
            image: "fred-test/httpd:1",
            command: ["httpd", "-f", "-p", "9000", "-h", "/www"],
            ports: { "9000/tcp": {} },
          },
        },
      },
    };
    await substrate.update(spec, next, signal);
    assert.equal(ingress.fqdns(spec.leaseUuid).services.get("app"), fqdn, "same hostname after an update");
    const after = await dials();
    assert.equal(after.length, 1, after.join());
    assert.match(after[0] as string, /:9000"$/);
    assert.deepEqual(await served(fqdn), { status: 200, body: "fred-test-httpd\n" });
  });
});
