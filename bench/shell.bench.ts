/**
 * Shell round trip: one byte to `cat` in a lease's container and its echo back, through
 * the Docker backend's contract route (`GET /shell/{uuid}`, signed, the kit's relay, the
 * engine's exec API) against `docker exec -i <container> cat` on the same container in the
 * same run. providerd's relay is not in this path (the whole stack with a chain is too heavy
 * for this bench; the e2e tests cover it through the mock): what is measured is the backend's
 * share. Prints one JSON line:
 *   shell_round_trip   p50/p99 ms through the backend, the same for docker exec, the p50
 *                      ratio (goal ≤ 1.5) and the load average at the end.
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import WebSocket from "ws";
import { hmacSecret, signRequest } from "../src/auth/hmac.ts";
import { instanceName } from "../src/backend/docker/names.ts";
import { execPath, SIGNATURE_HEADER } from "../src/core/backend-contract/index.ts";
import { CHANNEL, frame, SHELL_SUBPROTOCOL } from "../src/core/exec-channel.ts";
import { encodeQuery } from "../src/provider/backend-client/http.ts";
import {
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { provisionAndWait, provisionBody } from "../test/backend/docker/provision-helper.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { holdEngineLock } from "../test/support/docker.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const round = (x: number) => Math.round(x * 100) / 100;

/** Round trips of one byte through `send`, timed until `echoed` resolves. */
async function measure(send: (b: Buffer) => void, echoed: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < ROUNDS + 20; i++) {
    const at = performance.now();
    const wait = echoed();
    send(Buffer.from("x"));
    await wait;
    if (i >= 20) out.push(performance.now() - at); // the first 20 warm up
  }
  return out;
}

function nextData(on: (listener: () => void) => void): () => Promise<void> {
  let waiting: (() => void) | undefined;
  on(() => {
    const w = waiting;
    waiting = undefined;
    w?.();
  });
  return () =>
    new Promise<void>((resolve) => {
      waiting = resolve;
    });
}

async function main(): Promise<void> {
  await holdEngineLock();
  const setup = prepareDockerBackend({ startup_verify_duration: "0s" });
  const backend = await startInProcess(setup);
  const rx = await startReceiver(SECRET);
  const c = signedClient(backend.url, SECRET);
  const app = { image: "fred-test/owned:1" };
  const call = provisionBody(rx, manifest({ app }), [{ sku: SKU, quantity: 1, service_name: "app" }]);
  try {
    const done = await provisionAndWait(c, rx, call);
    if (done.status !== "success") throw new Error(`provision: ${JSON.stringify(done)}`);

    const uri = `${execPath(call.lease)}${encodeQuery({ service: "app", instance: "0", tty: "false", command: ["cat"] })}`;
    const signature = signRequest(hmacSecret(SECRET), {
      method: "GET",
      uri,
      timestamp: Math.floor(Date.now() / 1000),
    });
    const ws = new WebSocket(`${backend.url.replace(/^http/, "ws")}${uri}`, [SHELL_SUBPROTOCOL], {
      headers: { [SIGNATURE_HEADER]: signature },
    });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("unexpected-response", (_q, res) => reject(new Error(`shell ${res.statusCode}`)));
      ws.once("error", reject);
    });
    const viaBackend = await measure(
      (b) => ws.send(frame(CHANNEL.stdin, b)),
      nextData((l) => ws.on("message", (d: Buffer) => d[0] === CHANNEL.stdout && l())),
    );
    ws.close();

    const child = spawn("docker", ["exec", "-i", instanceName(call.lease, "app", 0), "cat"], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const direct = await measure(
      (b) => child.stdin.write(b),
      nextData((l) => child.stdout.on("data", l)),
    );
    child.stdin.end();

    console.log(
      JSON.stringify({
        bench: "shell_round_trip",
        rounds: ROUNDS,
        path: "docker backend contract route (no providerd)",
        p50_ms: round(percentile(viaBackend, 50)),
        p99_ms: round(percentile(viaBackend, 99)),
        docker_exec_p50_ms: round(percentile(direct, 50)),
        docker_exec_p99_ms: round(percentile(direct, 99)),
        p50_ratio: Number((percentile(viaBackend, 50) / percentile(direct, 50)).toFixed(2)),
        goal_ratio: 1.5,
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      }),
    );
  } finally {
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
