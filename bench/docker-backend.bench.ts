/**
 * Docker backend provisioning latency on the real engine, against a bare create+start of
 * the same image in the same run (what `docker run -d` asks the engine for, minus the CLI
 * process). "Running" is the engine's own `start` event timestamp for the container, so
 * both sides are measured on the same clock without polling. Prints JSON lines:
 *   docker_provision_to_running    one-container lease, POST /provision → start event
 *   docker_provision_to_callback   same, POST → success callback (startup_verify_duration 0s)
 *   docker_burst10_to_running      ten leases posted at once → last start event
 * Each with the bare figure beside it and the median ratio (goal ≤ 1.25). A second
 * baseline, "bare_hardened", is the same create+start with exactly the container options
 * the backend sends (tenant network, limits, tmpfs, dropped capabilities), which separates
 * the engine's cost of the mandated hardening from the backend's own overhead.
 */
import { randomUUID } from "node:crypto";
import type Docker from "dockerode";
import { loadDockerBackendConfig } from "../src/backend/docker/config.ts";
import { buildContainerSpec } from "../src/backend/docker/container-spec.ts";
import { connectDocker } from "../src/backend/docker/engine.ts";
import { leaseNetworkName } from "../src/backend/docker/names.ts";
import { serviceModel } from "../src/backend/docker/service-model.ts";
import {
  httpdManifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { provisionBody } from "../test/backend/docker/provision-helper.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { holdEngineLock } from "../test/support/docker.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const IMAGE = "fred-test/httpd:1";
const TENANT = "manifest1benchtenant000000000000000000000";

const docker = connectDocker("unix:///var/run/docker.sock");
const startedAt = new Map<string, number>(); // container name → start event (ms since epoch)
const waiters = new Map<string, () => void>();

async function followStarts(signal: AbortSignal): Promise<void> {
  const stream = (await docker.getEvents({
    filters: JSON.stringify({ type: ["container"], event: ["start"] }),
    abortSignal: signal,
  } as Docker.GetEventsOptions)) as NodeJS.ReadableStream;
  let buffer = "";
  stream.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
      const e = JSON.parse(buffer.slice(0, nl)) as {
        timeNano: number;
        Actor: { Attributes: { name: string } };
      };
      buffer = buffer.slice(nl + 1);
      const name = e.Actor.Attributes.name;
      startedAt.set(name, e.timeNano / 1e6);
      waiters.get(name)?.();
    }
  });
}

function started(name: string): Promise<number> {
  const known = startedAt.get(name);
  if (known !== undefined) return Promise.resolve(known);
  return new Promise((resolve) => waiters.set(name, () => resolve(startedAt.get(name) as number)));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

async function bareRun(hardened?: Docker.ContainerCreateOptions): Promise<{ name: string; sentAt: number }> {
  const name = `fred-bench-bare-${randomUUID().slice(0, 8)}`;
  const options: Docker.ContainerCreateOptions = hardened
    ? { ...hardened, name, Labels: {} }
    : {
        name,
        Image: IMAGE,
        HostConfig: { PortBindings: { "8080/tcp": [{}] } },
        ExposedPorts: { "8080/tcp": {} },
      };
  const sentAt = Date.now();
  const c = await docker.createContainer(options);
  await c.start();
  return { name, sentAt };
}

/** The exact options the backend would create for one instance of a lease, on `networkLease`'s network. */
function hardenedOptions(configPath: string, networkLease: string): Docker.ContainerCreateOptions {
  const config = loadDockerBackendConfig(configPath, {});
  const profile = { cpu_cores: 0.1, memory_mb: 32, disk_mb: 0 };
  const lease = randomUUID();
  const instance = { key: `${lease}-app-0`, service: "app", index: 0, sku: SKU, profile };
  return buildContainerSpec({
    spec: {
      leaseUuid: lease,
      tenant: TENANT,
      providerUuid: randomUUID(),
      operationId: randomUUID(),
      release: 1,
      backendName: "bench",
      storageId: randomUUID(),
      items: [],
      instances: [instance],
      payload: undefined,
      manifest: undefined,
      createdAtMs: Date.now(),
    },
    instance,
    model: serviceModel("app", { image: IMAGE, ports: { "8080/tcp": {} } }),
    config,
    network: leaseNetworkName(networkLease),
    mounts: { durable: new Map(), ephemeral: [] },
  });
}

async function main(): Promise<void> {
  await holdEngineLock();
  const events = new AbortController();
  await followStarts(events.signal);
  const setup = prepareDockerBackend({
    startup_verify_duration: "0s",
    total_cpu_cores: 64,
    total_memory_mb: 65536,
  });
  const backend = await startInProcess(setup);
  const rx = await startReceiver(SECRET);
  const c = signedClient(backend.url, SECRET);
  const leases: string[] = [];
  const bares: string[] = [];
  const items = [{ sku: SKU, quantity: 1, service_name: "app" }];
  const provision = async () => {
    const call = provisionBody(rx, httpdManifest("app"), items, { tenant: TENANT });
    leases.push(call.lease);
    const sentAt = Date.now();
    const res = await c.post("/provision", call.body);
    if (res.status !== 202) throw new Error(`provision ${res.status}: ${res.text}`);
    return { call, sentAt, name: `fred-${call.lease}-app-0` };
  };
  const callbackOf = (lease: string) =>
    rx.waitFor(
      (r) => r.deliveries.some((d) => d.route === "operation" && d.body.lease_uuid === lease),
      120_000,
    );
  try {
    // Warm-up: a lease network (the hardened bare runs join it), image metadata caches, the HTTP connection.
    const warm = await provision();
    await callbackOf(warm.call.lease);
    bares.push((await bareRun()).name);

    const hardened = hardenedOptions(setup.configPath, warm.call.lease);
    const fredRunning: number[] = [];
    const fredCallback: number[] = [];
    const bare: number[] = [];
    const bareHardened: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const p = await provision();
      fredRunning.push((await started(p.name)) - p.sentAt);
      await callbackOf(p.call.lease);
      fredCallback.push(Date.now() - p.sentAt);
      const b = await bareRun();
      bares.push(b.name);
      bare.push((await started(b.name)) - b.sentAt);
      const h = await bareRun(hardened);
      bares.push(h.name);
      bareHardened.push((await started(h.name)) - h.sentAt);
    }
    const ratio = median(fredRunning) / median(bare);
    console.log(
      JSON.stringify({
        bench: "docker_provision_to_running",
        rounds: ROUNDS,
        median_ms: round(median(fredRunning)),
        bare_median_ms: round(median(bare)),
        median_ratio: Number(ratio.toFixed(2)),
        goal_ratio: 1.25,
        bare_hardened_median_ms: round(median(bareHardened)),
        median_ratio_vs_hardened: Number((median(fredRunning) / median(bareHardened)).toFixed(2)),
      }),
    );
    console.log(
      JSON.stringify({
        bench: "docker_provision_to_callback",
        rounds: ROUNDS,
        startup_verify_duration: "0s",
        median_ms: round(median(fredCallback)),
        max_ms: round(Math.max(...fredCallback)),
      }),
    );

    const burstStart = Date.now();
    const burst = await Promise.all(Array.from({ length: 10 }, () => provision()));
    const burstRunning = Math.max(...(await Promise.all(burst.map((p) => started(p.name))))) - burstStart;
    await Promise.all(burst.map((p) => callbackOf(p.call.lease)));
    const burstCallbacks = Date.now() - burstStart;
    const bareStart = Date.now();
    const bareBurst = await Promise.all(Array.from({ length: 10 }, () => bareRun()));
    bares.push(...bareBurst.map((b) => b.name));
    const bareRunning = Math.max(...(await Promise.all(bareBurst.map((b) => started(b.name))))) - bareStart;
    console.log(
      JSON.stringify({
        bench: "docker_burst10_to_running",
        leases: 10,
        all_running_ms: Math.round(burstRunning),
        all_callbacks_ms: burstCallbacks,
        bare_all_running_ms: Math.round(bareRunning),
        ratio: Number((burstRunning / bareRunning).toFixed(2)),
      }),
    );
  } finally {
    for (const lease of leases) await c.post("/deprovision", { lease_uuid: lease }).catch(() => {});
    await Promise.all(
      bares.map((name) =>
        docker
          .getContainer(name)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
    await rx
      .waitFor((r) => leases.every((l) => r.effects.includes(`lifecycle:${l}:deprovisioned`)), 120_000)
      .catch(() => {});
    await backend.close();
    await rx.close();
    await setup.cleanup();
    events.abort();
  }
}

await main();
