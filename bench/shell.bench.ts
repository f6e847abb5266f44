/**
 * Shell round trip: one byte to `cat` in a lease's container and its echo back, against
 * `docker exec -i <container> cat` on the same container in the same run. Two paths:
 *   - the Docker backend's contract route alone (`GET /shell/{uuid}`, signed, the kit's
 *     relay, the engine's exec API), the backend started in this process: its share;
 *   - the tenant's route through providerd (`GET /v1/leases/{uuid}/shell`, ADR-036 token,
 *     providerd's relay, then the same contract route), with a devnet, `fred backend docker`
 *     and providerd as real processes: what a tenant sees. The same through providerd and
 *     the mock backend (its built-in `cat`, no engine) shows providerd's own share.
 * Prints JSON lines, each with the load average beside it:
 *   shell_round_trip             backend route: p50/p99 ms, the same for docker exec, the
 *                                p50 ratio (goal ≤ 1.5) and the p99 ratio.
 *   shell_round_trip_providerd   backend "docker": through providerd + fred backend docker,
 *                                the same fields against docker exec on that lease's
 *                                container; backend "mock": through providerd + the mock
 *                                backend, and its ratios against the same docker exec.
 *                                `transport`: "tcp" for a backend reached over loopback
 *                                TCP; "unix" for a second `fred backend docker` co-located
 *                                with providerd on a Unix socket (listen_addr unix:/…), through
 *                                providerd and called directly, against the same docker exec.
 *                                backend "docker-bare-relay" / "docker-pipe-relay": the TCP
 *                                backend's route through a bare Node process in providerd's
 *                                place (shell-bare-relay.ts: a `ws` relay / a byte copier),
 *                                the floor of one more process on the path.
 * The paths compared in one line are measured interleaved, round by round, so a change of
 * load during the run moves them alike instead of moving their ratio.
 *                                Skipped with BENCH_SHELL_PROVIDERD=0.
 *
 * Usage: flock /tmp/docker-tests.lock npm run bench -- shell
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { hmacSecret, signRequest } from "../src/auth/hmac.ts";
import { instanceName } from "../src/backend/docker/names.ts";
import { execPath, SIGNATURE_HEADER } from "../src/core/backend-contract/index.ts";
import { CHANNEL, frame, SHELL_SUBPROTOCOL } from "../src/core/exec-channel.ts";
import { encodeQuery } from "../src/provider/backend-client/http.ts";
import {
  type DockerProcess,
  type DockerTestSetup,
  manifest,
  prepareDockerBackend,
  SECRET,
  SKU,
  spawnDockerBackend,
  startInProcess,
} from "../test/backend/docker/helpers.ts";
import { provisionAndWait, provisionBody } from "../test/backend/docker/provision-helper.ts";
import { startReceiver } from "../test/backend/kit/receiver.ts";
import { signedClient } from "../test/backend/kit/signed-client.ts";
import { call, TenantKey } from "../test/provider/api/tenant-client.ts";
import { ShellClient } from "../test/provider/e2e/shell-client.ts";
import { mockSkus, SECRETS, Stack, sha256 } from "../test/provider/e2e/stack.ts";
import { dockerCli, holdEngineLock } from "../test/support/docker.ts";
import { until } from "../test/support/index.ts";

const UNIX_SECRET = "bench-unix-socket-backend-secret-0123456789";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const THROUGH_PROVIDERD = process.env.BENCH_SHELL_PROVIDERD !== "0";

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const round = (x: number) => Math.round(x * 100) / 100;
const ratio = (a: number[], b: number[], p: number) =>
  Number((percentile(a, p) / percentile(b, p)).toFixed(2));
const load = () => loadavg().map((l) => Number(l.toFixed(2)));

/** One way to send a byte to `cat` and learn that its echo came back. */
interface EchoPath {
  send(b: Buffer): void;
  echoed(): Promise<void>;
}

/**
 * Round trips of one byte over each path, interleaved round by round (path A, path B, path
 * A, …), so that every path meets the same load: the ratio of two paths measured one after
 * the other moved with whatever else the machine was doing in between.
 */
async function measure(...paths: EchoPath[]): Promise<number[][]> {
  const out = paths.map((): number[] => []);
  for (let i = 0; i < ROUNDS + 20; i++) {
    for (const [k, path] of paths.entries()) {
      const at = performance.now();
      const wait = path.echoed();
      path.send(Buffer.from("x"));
      await wait;
      if (i >= 20) out[k]?.push(performance.now() - at); // the first 20 warm up
    }
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

/** An open shell WebSocket running `cat` (channel 0 in, channel 1 out). */
function overShell(ws: WebSocket): EchoPath {
  return {
    send: (b) => ws.send(frame(CHANNEL.stdin, b)),
    echoed: nextData((l) => ws.on("message", (d: Buffer) => d[0] === CHANNEL.stdout && l())),
  };
}

/** `docker exec -i <container> cat`; `close` ends it. */
function overDockerExec(container: string): EchoPath & { close(): void } {
  const child = spawn("docker", ["exec", "-i", container, "cat"], { stdio: ["pipe", "pipe", "inherit"] });
  return {
    send: (b) => child.stdin.write(b),
    echoed: nextData((l) => child.stdout.on("data", l)),
    close: () => child.stdin.end(),
  };
}

/** p50/p99 of `via` and of docker exec, and their ratios. */
function figures(via: number[], direct: number[]) {
  return {
    p50_ms: round(percentile(via, 50)),
    p99_ms: round(percentile(via, 99)),
    docker_exec_p50_ms: round(percentile(direct, 50)),
    docker_exec_p99_ms: round(percentile(direct, 99)),
    p50_ratio: ratio(via, direct, 50),
    p99_ratio: ratio(via, direct, 99),
    goal_ratio: 1.5,
  };
}

/**
 * The backend's signed contract route (`GET /shell/{uuid}`) running `cat` in service "app":
 * its WebSocket URL and signature header. `backendUrl` is the backend's ready-line URL.
 */
function contractRequest(
  backendUrl: string,
  lease: string,
  secret = SECRET,
): { url: string; signature: string } {
  const uri = `${execPath(lease)}${encodeQuery({ service: "app", instance: "0", tty: "false", command: ["cat"] })}`;
  const signature = signRequest(hmacSecret(secret), {
    method: "GET",
    uri,
    timestamp: Math.floor(Date.now() / 1000),
  });
  return { url: `${backendUrl.replace(/^http/, "ws")}${uri}`, signature };
}

/** An open WebSocket, or the reason it did not open. */
async function opened(ws: WebSocket): Promise<WebSocket> {
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("unexpected-response", (_q, res) => reject(new Error(`shell ${res.statusCode}`)));
    ws.once("error", reject);
  });
  return ws;
}

/** The contract route, called directly; `unix:/path` for a backend on a socket. */
async function contractShell(backendUrl: string, lease: string, secret = SECRET): Promise<WebSocket> {
  const socketPath = backendUrl.startsWith("unix:") ? backendUrl.slice("unix:".length) : undefined;
  const { url, signature } = contractRequest(
    socketPath === undefined ? backendUrl : "ws://localhost",
    lease,
    secret,
  );
  return opened(
    new WebSocket(url, [SHELL_SUBPROTOCOL], {
      headers: { [SIGNATURE_HEADER]: signature },
      ...(socketPath === undefined ? {} : { createConnection: () => connect(socketPath) }),
    }),
  );
}

/** The contract route through a bare relay (shell-bare-relay.ts) in its own process. */
async function bareRelayShell(relayUrl: string, backendUrl: string, lease: string): Promise<WebSocket> {
  const { url, signature } = contractRequest(backendUrl, lease);
  return opened(
    new WebSocket(relayUrl, [SHELL_SUBPROTOCOL], {
      headers: { "x-upstream": url, "x-upstream-signature": signature },
    }),
  );
}

/** Starts shell-bare-relay.ts (`ws` or `pipe`) as a child process; its URL and how to stop it. */
async function startBareRelay(mode: "ws" | "pipe"): Promise<{ url: string; stop(): Promise<void> }> {
  const script = fileURLToPath(new URL("shell-bare-relay.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, mode], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string];
  return {
    url: (JSON.parse(line) as { url: string }).url,
    stop: async () => {
      child.kill("SIGTERM");
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

/** The Docker backend's contract route alone, the backend in this process. */
async function backendRoute(): Promise<void> {
  const setup = prepareDockerBackend({ startup_verify_duration: "0s" });
  const backend = await startInProcess(setup);
  const rx = await startReceiver(SECRET);
  const c = signedClient(backend.url, SECRET);
  const app = { image: "fred-test/owned:1" };
  const call = provisionBody(rx, manifest({ app }), [{ sku: SKU, quantity: 1, service_name: "app" }]);
  try {
    const done = await provisionAndWait(c, rx, call);
    if (done.status !== "success") throw new Error(`provision: ${JSON.stringify(done)}`);

    const ws = await contractShell(backend.url, call.lease);
    const exec = overDockerExec(instanceName(call.lease, "app", 0));
    const [viaBackend = [], direct = []] = await measure(overShell(ws), exec);
    ws.close();
    exec.close();

    console.log(
      JSON.stringify({
        bench: "shell_round_trip",
        rounds: ROUNDS,
        path: "docker backend contract route (no providerd)",
        ...figures(viaBackend, direct),
        loadavg: load(),
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

/** Idles forever as PID 1; the shell's `cat` runs beside it. */
const WORKLOAD = Buffer.from(JSON.stringify({ image: "fred-test/unhealthy:1" }));

/**
 * The tenant's route through providerd: a devnet, a mock backend, two `fred backend docker`
 * (one on loopback TCP, one on a Unix socket beside providerd), providerd.
 */
async function throughProviderd(): Promise<void> {
  const stack = new Stack();
  let setup: DockerTestSetup | undefined;
  let docker: DockerProcess | undefined;
  let unixSetup: DockerTestSetup | undefined;
  let unixDocker: DockerProcess | undefined;
  const relays: Awaited<ReturnType<typeof startBareRelay>>[] = [];
  const socketDir = mkdtempSync(join(tmpdir(), "fred-bench-sock-"));
  let tenant!: TenantKey;

  const ready = async (lease: string) => {
    await stack.waitState([lease], "LEASE_STATE_ACTIVE", 120_000);
    await until(
      async () => {
        const r = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease));
        return r.body.state === "LEASE_STATE_ACTIVE" && r.body.provision_status === "ready";
      },
      "providerd reads the lease ACTIVE and ready",
      { timeoutMs: 120_000, intervalMs: 200 },
    );
  };
  const cat = async (lease: string) =>
    (
      await new ShellClient(`${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/shell?command=cat`, {
        headers: { authorization: `Bearer ${tenant.fresh(lease)}` },
      }).open()
    ).ws;

  try {
    await stack.start(
      (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" }],
      async (s) => {
        tenant = new TenantKey(s.account("tenant1").private_key_hex);
        setup = prepareDockerBackend({
          sku_mapping: { [s.sku("docker-medium")]: "tiny" },
          sku_profiles: { tiny: { cpu_cores: 0.25, memory_mb: 32, disk_mb: 0 } },
          container_stop_timeout: "1s",
        });
        unixSetup = prepareDockerBackend({
          name: "docker-unix",
          listen_addr: `unix:${join(socketDir, "docker-backend.sock")}`,
          // providerd refuses one HMAC key on two backends.
          callback_secret: UNIX_SECRET,
          sku_mapping: { [s.sku("docker-large")]: "tiny" },
          sku_profiles: { tiny: { cpu_cores: 0.25, memory_mb: 32, disk_mb: 0 } },
          container_stop_timeout: "1s",
        });
        [docker, unixDocker] = await Promise.all([
          spawnDockerBackend(setup.configPath, 120_000),
          spawnDockerBackend(unixSetup.configPath, 120_000),
        ]);
        s.extraConfig = {
          backends: [
            {
              name: "mock-1",
              url: s.mocks[0]!.ready.url,
              hmac_secret: SECRETS[0],
              default: true,
              skus: [s.sku("docker-small")],
            },
            { name: "docker-1", url: docker.ready.url, hmac_secret: SECRET, skus: [s.sku("docker-medium")] },
            {
              name: "docker-unix",
              url: unixDocker.ready.url,
              hmac_secret: UNIX_SECRET,
              skus: [s.sku("docker-large")],
            },
          ],
        };
      },
    );
    await stack.startProviderd();

    /** A lease of `sku` whose payload is WORKLOAD, uploaded through providerd. */
    const deployed = async (sku: string): Promise<string> => {
      const [lease] = (await stack.createLeases(1, sku, sha256(WORKLOAD))) as [string];
      const upload = await call(
        stack.api,
        `/v1/leases/${lease}/data`,
        tenant.payload(lease, Buffer.from(sha256(WORKLOAD)).toString("hex")),
        { method: "POST", body: WORKLOAD, headers: { "content-type": "application/octet-stream" } },
      );
      if (upload.status !== 202) throw new Error(`upload ${upload.status}: ${upload.text}`);
      return lease;
    };
    const onDocker = await deployed("docker-medium");
    const onUnix = await deployed("docker-large");
    const [onMock] = (await stack.createLeases(1, "docker-small")) as [string];
    await Promise.all([ready(onDocker), ready(onUnix), ready(onMock)]);

    const container = (
      await dockerCli([
        "ps",
        "-q",
        "--filter",
        `label=fred.lease_uuid=${onDocker}`,
        "--filter",
        "status=running",
      ])
    ).out.trim();
    const [ws, mockWs, unixWs] = [await cat(onDocker), await cat(onMock), await cat(onUnix)];
    const backendWs = await contractShell(docker!.ready.url, onDocker);
    const unixBackendWs = await contractShell(unixDocker!.ready.url, onUnix, UNIX_SECRET);
    const [wsRelay, pipeRelay] = [await startBareRelay("ws"), await startBareRelay("pipe")];
    relays.push(wsRelay, pipeRelay);
    const relayWs = await bareRelayShell(wsRelay.url, docker!.ready.url, onDocker);
    const pipeWs = await bareRelayShell(pipeRelay.url, docker!.ready.url, onDocker);
    const exec = overDockerExec(container);
    const [
      viaDocker = [],
      direct = [],
      viaMock = [],
      viaBackend = [],
      viaUnix = [],
      viaUnixBackend = [],
      viaRelay = [],
      viaPipe = [],
    ] = await measure(
      overShell(ws),
      exec,
      overShell(mockWs),
      overShell(backendWs),
      overShell(unixWs),
      overShell(unixBackendWs),
      overShell(relayWs),
      overShell(pipeWs),
    );
    for (const open of [ws, mockWs, backendWs, unixWs, unixBackendWs, relayWs, pipeWs]) open.close();
    exec.close();
    const line = (backend: string, transport: string | undefined, path: string, via: number[]) =>
      console.log(
        JSON.stringify({
          bench: "shell_round_trip_providerd",
          backend,
          ...(transport === undefined ? {} : { transport }),
          rounds: ROUNDS,
          path,
          ...figures(via, direct),
          loadavg: load(),
        }),
      );
    line("docker", "tcp", "providerd + fred backend docker (real processes)", viaDocker);
    line(
      "mock",
      undefined,
      "providerd + mock backend (built-in cat, no engine); ratios against the docker exec rounds above",
      viaMock,
    );
    line(
      "docker-direct",
      "tcp",
      "the same fred backend docker process, its contract route called directly (no providerd): providerd's share is the docker line minus this one",
      viaBackend,
    );
    line(
      "docker",
      "unix",
      "providerd + a second fred backend docker co-located on a Unix socket (listen_addr unix:/…); ratios against the docker exec rounds above",
      viaUnix,
    );
    line(
      "docker-direct",
      "unix",
      "that socket backend's contract route called directly over the socket (no providerd)",
      viaUnixBackend,
    );
    line(
      "docker-bare-relay",
      "tcp",
      "the TCP backend's contract route through a bare Node WebSocket relay in providerd's place (bench/shell-bare-relay.ts ws: messages passed both ways, nothing else)",
      viaRelay,
    );
    line(
      "docker-pipe-relay",
      "tcp",
      "the same through a Node process that only copies bytes both ways (bench/shell-bare-relay.ts pipe): the floor of any path with one more Node process on it",
      viaPipe,
    );
  } finally {
    await Promise.all(relays.map((r) => r.stop()));
    await stack.close();
    await Promise.all([docker?.stop(), unixDocker?.stop()]);
    await Promise.all([setup?.cleanup(), unixSetup?.cleanup()]);
    rmSync(socketDir, { recursive: true, force: true });
  }
}

await holdEngineLock();
await backendRoute();
if (THROUGH_PROVIDERD) await throughProviderd();
