/**
 * What `image_pull_policy: always` costs a provision: POST /provision → success callback for
 * a one-container lease whose image comes from a real registry on loopback (Debian's
 * docker-registry with TLS, test/support/registry.ts), pulled and pinned by digest on every
 * provision, beside the same figure under `if-not-present` with the same image already on
 * the host (no registry involved). Prints JSON lines with the 1-minute load average:
 *   docker_provision_pull_always       median/max ms, layers already on the host (each
 *                                      provision re-resolves the tag and pins its digest)
 *   docker_provision_pull_always_cold  one provision after the image was removed locally
 *                                      (the layers come over the loopback registry)
 *   docker_provision_if_not_present    median/max ms, the local image used as found
 */
import { loadavg } from "node:os";
import type { RunningDockerBackend } from "../src/backend/docker/main.ts";
import {
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { provisionBody } from "../test/backend/docker/provision-helper.ts";
import { type Receiver, startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { dockerCli, holdEngineLock } from "../test/support/docker.ts";
import { registrySkip, startRegistry } from "../test/support/registry.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const LOCAL_IMAGE = "fred-test/httpd:1";
const items = [{ sku: SKU, quantity: 1, service_name: "app" }];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;
const load = () => Number(loadavg()[0]?.toFixed(2));

/** One backend under `policy`; `provision(image)` resolves with POST → success callback in ms. */
async function backendUnder(policy: "always" | "if-not-present", registries: string[], rx: Receiver) {
  const setup = prepareDockerBackend({
    image_pull_policy: policy,
    allowed_registries: registries,
    startup_verify_duration: "0s",
    total_cpu_cores: 64,
    total_memory_mb: 65536,
  });
  const backend: RunningDockerBackend = await startInProcess(setup);
  const c = signedClient(backend.url, SECRET);
  const leases: string[] = [];
  return {
    async provision(image: string): Promise<number> {
      const call = provisionBody(rx, manifest({ app: { image, ports: { "8080/tcp": {} } } }), items);
      leases.push(call.lease);
      const sentAt = performance.now();
      const res = await c.post("/provision", call.body);
      if (res.status !== 202) throw new Error(`provision ${res.status}: ${res.text}`);
      const ours = (d: Receiver["deliveries"][number]) =>
        d.route === "operation" && d.body.lease_uuid === call.lease;
      await rx.waitFor((r) => r.deliveries.some(ours), 120_000);
      const body = rx.deliveries.find(ours)?.body;
      if (body?.status !== "success") throw new Error(`provision failed: ${JSON.stringify(body)}`);
      return performance.now() - sentAt;
    },
    async close() {
      for (const lease of leases) await c.post("/deprovision", { lease_uuid: lease }).catch(() => {});
      await backend.close();
      await setup.cleanup();
    },
  };
}

async function main(): Promise<void> {
  const missing = registrySkip();
  if (missing) throw new Error(missing);
  await holdEngineLock();
  const rx = await startReceiver(SECRET);
  await using registry = await startRegistry();
  const pushed = await registry.push(LOCAL_IMAGE, "bench-app:1");
  const remote = `${registry.host}/bench-app:1`;
  const always = await backendUnder("always", [registry.host], rx);
  const local = await backendUnder("if-not-present", ["docker.io"], rx);
  try {
    // Cold: nothing of the image on the host under the registry's name.
    await dockerCli(["rmi", "--force", remote, pushed]);
    const cold = await always.provision(remote);
    // Warm-up of the other side (tenant network, engine caches, the HTTP connection).
    await local.provision(LOCAL_IMAGE);
    const pulled: number[] = [];
    const found: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      pulled.push(await always.provision(remote));
      found.push(await local.provision(LOCAL_IMAGE));
    }
    console.log(
      JSON.stringify({
        bench: "docker_provision_pull_always",
        rounds: ROUNDS,
        median_ms: round(median(pulled)),
        max_ms: round(Math.max(...pulled)),
        if_not_present_median_ms: round(median(found)),
        median_ratio: Number((median(pulled) / median(found)).toFixed(2)),
        load_average_1m: load(),
      }),
    );
    console.log(
      JSON.stringify({
        bench: "docker_provision_pull_always_cold",
        ms: round(cold),
        load_average_1m: load(),
      }),
    );
    console.log(
      JSON.stringify({
        bench: "docker_provision_if_not_present",
        rounds: ROUNDS,
        median_ms: round(median(found)),
        max_ms: round(Math.max(...found)),
        load_average_1m: load(),
      }),
    );
  } finally {
    await always.close();
    await local.close();
    await rx.close();
  }
}

await main();
