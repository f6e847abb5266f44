/**
 * `GET /v1/leases/{uuid}/logs?follow=true` on real processes: a devnet, a mock backend,
 * a Docker backend (`fred backend docker`, a real process) and providerd; one WebSocket
 * client in this process. Prints JSON lines, each with the load average beside it:
 *   logs_follow_mock_throughput  through providerd from the mock backend to one client:
 *                                20,000 short lines (10,000 per stream, within the
 *                                per-stream burst so the byte rate does not cut them)
 *                                written at once; lines/s and MB/s of frames from the
 *                                write to the last frame (median of BENCH_ROUNDS).
 *   logs_follow_docker_latency   a busybox loop in a container on the Docker backend
 *                                writes a line every 50 ms; per line, the engine's own
 *                                timestamp of the line (taken when the engine reads it
 *                                from the container's stdout) to its frame at the client,
 *                                p50/p99/max ms over BENCH_LINES lines (goal p99 ≤ 200 ms).
 *                                Skipped with BENCH_LOGS_DOCKER=0.
 *
 * Usage: flock /tmp/docker-tests.lock npm run bench -- logs-follow
 */
import { loadavg } from "node:os";
import WebSocket from "ws";
import {
  type DockerProcess,
  prepareDockerBackend,
  SECRET,
  spawnDockerBackend,
} from "../test/backend/docker/helpers.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { call, TenantKey } from "../test/provider/api/tenant-client.ts";
import { mockSkus, SECRETS, Stack, sha256 } from "../test/provider/e2e/stack.ts";
import { holdEngineLock } from "../test/support/docker.ts";
import { until } from "../test/support/index.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LINES = Number(process.env.BENCH_LINES ?? 400);
const WITH_DOCKER = process.env.BENCH_LOGS_DOCKER !== "0";
const PER_STREAM = 10_000;

const load = () => loadavg().map((l) => Number(l.toFixed(2)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] as number;
};
const round = (x: number) => Math.round(x * 10) / 10;

/** The ticking workload: PID 1 is the shell, so its own stdout is the container's log. */
const TICKER = Buffer.from(
  JSON.stringify({
    image: "fred-test/unhealthy:1",
    command: [
      "/bin/sh",
      "-c",
      'trap "exit 0" TERM; i=0; while true; do i=$((i+1)); echo "tick $i"; usleep 50000; done',
    ],
  }),
);

const stack = new Stack();
let docker: DockerProcess | undefined;
let setup: ReturnType<typeof prepareDockerBackend> | undefined;
let tenant: TenantKey;

function follow(lease: string, onFrame: (text: string, at: number) => void): Promise<WebSocket> {
  const url = `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/logs?follow=true&tail=0&token=${tenant.access(lease)}`;
  const ws = new WebSocket(url);
  ws.on("message", (data) => onFrame(String(data), Date.now()));
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

async function ready(lease: string): Promise<void> {
  await stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
  await until(
    async () => {
      const res = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
      return res.body.provision_status === "ready";
    },
    "the lease is ready",
    120_000,
  );
}

async function mockThroughput(): Promise<void> {
  const [lease] = await stack.createLeases(1, "docker-small");
  await ready(lease!);
  const mock = signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!);
  const rates: number[] = [];
  const mbs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let lines = 0;
    let bytes = 0;
    let last = 0;
    // A new stream each round: its per-stream byte buckets start full.
    const ws = await follow(lease!, (text, at) => {
      bytes += Buffer.byteLength(text);
      if (text.startsWith('{"service"')) lines++;
      last = at;
    });
    const started = Date.now();
    await Promise.all(
      ["stdout", "stderr"].map((stream) =>
        mock.post(`/_mock/log/${lease}`, { line: `r${r} ${stream} line`, stream, count: PER_STREAM }),
      ),
    );
    await until(() => lines >= 2 * PER_STREAM, "every line at the client", {
      timeoutMs: 120_000,
      intervalMs: 5,
    });
    const seconds = (last - started) / 1000;
    rates.push(lines / seconds);
    mbs.push(bytes / 1e6 / seconds);
    ws.terminate();
  }
  console.log(
    JSON.stringify({
      bench: "logs_follow_mock_throughput",
      rounds: ROUNDS,
      lines_per_round: 2 * PER_STREAM,
      lines_per_s: Math.round(median(rates)),
      frame_mb_per_s: round(median(mbs)),
      loadavg: load(),
    }),
  );
}

async function dockerLatency(): Promise<void> {
  const [lease] = await stack.createLeases(1, "docker-medium", sha256(TICKER));
  const hash = Buffer.from(sha256(TICKER)).toString("hex");
  const upload = await call(stack.api, `/v1/leases/${lease}/data`, tenant.payload(lease!, hash), {
    method: "POST",
    body: TICKER,
    headers: { "content-type": "application/octet-stream" },
  });
  if (upload.status !== 202) throw new Error(`upload ${upload.status}: ${upload.text}`);
  await ready(lease!);
  const latencies: number[] = [];
  const ws = await follow(lease!, (text, at) => {
    const frame = JSON.parse(text) as { line?: string; ts?: string };
    if (frame.line?.startsWith("tick ") && frame.ts !== undefined) latencies.push(at - Date.parse(frame.ts));
  });
  await until(() => latencies.length >= LINES, `${LINES} lines`, { timeoutMs: LINES * 1000 });
  ws.terminate();
  const sample = latencies.slice(0, LINES);
  console.log(
    JSON.stringify({
      bench: "logs_follow_docker_latency",
      lines: sample.length,
      interval_ms: 50,
      p50_ms: quantile(sample, 0.5),
      p99_ms: quantile(sample, 0.99),
      max_ms: Math.max(...sample),
      goal_p99_ms: 200,
      loadavg: load(),
    }),
  );
}

try {
  if (WITH_DOCKER) await holdEngineLock();
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_LOG_INTERVAL: "0s" }],
    async (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      const mock = {
        name: "mock-1",
        url: s.mocks[0]!.ready.url,
        hmac_secret: SECRETS[0],
        default: true,
        skus: [s.sku("docker-small")],
      };
      if (!WITH_DOCKER) return;
      setup = prepareDockerBackend({
        sku_mapping: { [s.sku("docker-medium")]: "tiny" },
        sku_profiles: { tiny: { cpu_cores: 0.25, memory_mb: 32, disk_mb: 0 } },
        container_stop_timeout: "1s",
      });
      docker = await spawnDockerBackend(setup.configPath, 120_000);
      s.extraConfig = {
        backends: [
          mock,
          { name: "docker-1", url: docker.ready.url, hmac_secret: SECRET, skus: [s.sku("docker-medium")] },
        ],
      };
    },
  );
  await stack.startProviderd();
  await mockThroughput();
  if (WITH_DOCKER) await dockerLatency();
} finally {
  await stack.close();
  await docker?.stop();
  await setup?.cleanup();
}
