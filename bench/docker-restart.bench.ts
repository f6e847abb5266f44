/**
 * Restart latency on the Docker backend against a bare `docker restart` in the same run.
 * The lease runs `fred-test/httpd:1` behind an init with a 1 s stop grace; the bare side is
 * a twin container created from the lease container's own inspected configuration (its
 * labels dropped, so the backend never sees it) and restarted through the engine API with
 * the same 1 s stop timeout, which is what `docker restart -t 1` sends. Neither side waits
 * a fixed startup time (startup_verify_duration 0s; the engine's restart returns once the
 * container runs). Prints one JSON line:
 *   docker_restart_to_ready   POST /restart → the completion callback (success), median
 *                             ms, the bare median, their ratio (goal ≤ 1.5) and the
 *                             load average at the end.
 */
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import type Docker from "dockerode";
import { connectDocker } from "../src/backend/docker/engine.ts";
import { instanceName } from "../src/backend/docker/names.ts";
import {
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { outboxDrained, provisionAndWait, provisionBody } from "../test/backend/docker/provision-helper.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { holdEngineLock } from "../test/support/docker.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const STOP_TIMEOUT_S = 1;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

/** A copy of the lease's container: same image, command, limits, mounts and network. */
async function twinOf(docker: Docker, name: string): Promise<Docker.Container> {
  const info = await docker.getContainer(name).inspect();
  const twin = await docker.createContainer({
    ...info.Config,
    name: `fred-bench-twin-${randomUUID().slice(0, 8)}`,
    Labels: {},
    HostConfig: info.HostConfig,
  } as Docker.ContainerCreateOptions);
  await twin.start();
  return twin;
}

async function main(): Promise<void> {
  await holdEngineLock();
  const docker = connectDocker("unix:///var/run/docker.sock");
  const setup = prepareDockerBackend({ startup_verify_duration: "0s" });
  const backend = await startInProcess(setup);
  const rx = await startReceiver(SECRET);
  const c = signedClient(backend.url, SECRET);
  const app = {
    image: "fred-test/httpd:1",
    init: true,
    stop_grace_period: `${STOP_TIMEOUT_S}s`,
    ports: { "8080/tcp": {} },
  };
  const call = provisionBody(rx, manifest({ app }), [{ sku: SKU, quantity: 1, service_name: "app" }]);
  let twin: Docker.Container | undefined;
  try {
    const done = await provisionAndWait(c, rx, call);
    if (done.status !== "success") throw new Error(`provision: ${JSON.stringify(done)}`);
    twin = await twinOf(docker, instanceName(call.lease, "app", 0));

    const restart = async (): Promise<number> => {
      const id = randomUUID();
      const sentAt = performance.now();
      const res = await c.post("/restart", {
        lease_uuid: call.lease,
        maintenance_id: id,
        callback_url: call.body.callback_url,
        admitted_at: new Date().toISOString(),
      });
      if (res.status !== 202) throw new Error(`restart ${res.status}: ${res.text}`);
      await rx.waitFor((r) => r.deliveries.some((d) => d.body.maintenance_id === id), 60_000);
      const elapsed = performance.now() - sentAt;
      const body = rx.deliveries.find((d) => d.body.maintenance_id === id)?.body;
      if (body?.status !== "success") throw new Error(`restart callback: ${JSON.stringify(body)}`);
      // The next command is refused while this completion is still queued in the outbox.
      await outboxDrained(backend.url);
      return elapsed;
    };
    const bare = async (): Promise<number> => {
      const sentAt = performance.now();
      await twin?.restart({ t: STOP_TIMEOUT_S });
      return performance.now() - sentAt;
    };

    await restart(); // warm-up: connections, image metadata, the tenant network
    await bare();
    const fred: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      fred.push(await restart());
      plain.push(await bare());
    }
    console.log(
      JSON.stringify({
        bench: "docker_restart_to_ready",
        rounds: ROUNDS,
        stop_timeout_s: STOP_TIMEOUT_S,
        median_ms: round(median(fred)),
        max_ms: round(Math.max(...fred)),
        bare_median_ms: round(median(plain)),
        median_ratio: Number((median(fred) / median(plain)).toFixed(2)),
        goal_ratio: 1.5,
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      }),
    );
  } finally {
    await twin?.remove({ force: true }).catch(() => {});
    await c.post("/deprovision", { lease_uuid: call.lease }).catch(() => {});
    await rx
      .waitFor((r) => r.effects.includes(`lifecycle:${call.lease}:deprovisioned`), 60_000)
      .catch(() => {});
    await backend.close();
    await rx.close();
    await setup.cleanup();
  }
}

await main();
