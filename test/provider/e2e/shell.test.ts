import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CHANNEL, SHELL_CLOSE } from "../../../src/core/exec-channel.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { FRED_BIN, runFred, until } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { WsClient } from "../api/ws-client.ts";
import { ShellClient, ShellRefusal } from "./shell-client.ts";
import { mockSkus, SECRETS, Stack, sha256 } from "./stack.ts";

/**
 * `GET /v1/leases/{uuid}/shell` on real processes: the devnet, two mock backends (the
 * second never answers a shell upgrade) and providerd with a replay store and tiny shell
 * limits (2 per lease, 3 in total, 4 s idle, 8 s at most), so every limit is reached in
 * seconds. The mock's built-in commands stand in for a container's.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";
let tenant: TenantKey;
let other: TenantKey;

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-medium")),
        MOCK_BACKEND_DELAY: "0s",
        MOCK_BACKEND_HANG_EXEC: "1",
      },
    ],
    (s) => {
      tenant = new TenantKey(s.account("tenant1").private_key_hex);
      other = new TenantKey(s.account("tenant2").private_key_hex);
      s.backendOverrides = [
        { skus: [s.sku("docker-small")] },
        { skus: [s.sku("docker-medium")], timeout: "2s" },
      ];
      s.extraConfig = {
        token_tracker_db_path: `${s.dir}/tokens.db`,
        tenant_rate_limit_rps: 1000,
        tenant_rate_limit_burst: 1000,
        tenant_shell_sessions_per_lease: 2,
        tenant_shell_sessions_total: 3,
        tenant_shell_idle_timeout: "4s",
        tenant_shell_max_duration: "8s",
      };
    },
  );
  await stack.startProviderd();
});

after(() => stack.close());

async function activeLease(sku = "docker-small"): Promise<string> {
  const [lease] = await stack.createLeases(1, sku);
  await stack.waitState([lease!], ACTIVE);
  await until(async () => {
    const res = await fetch(`${stack.api}/v1/leases/${lease}/status`, {
      headers: { authorization: `Bearer ${tenant.access(lease!)}` },
    });
    return ((await res.json()) as { state?: string }).state === ACTIVE;
  }, "providerd reads the lease ACTIVE");
  return lease!;
}

function shellUrl(lease: string, query: Record<string, string | string[]> = {}, token?: string): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) for (const one of [v].flat()) params.append(k, one);
  if (token !== undefined) params.set("token", token);
  const q = params.toString();
  return `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/shell${q === "" ? "" : `?${q}`}`;
}

function shell(lease: string, command?: string[], query: Record<string, string> = {}): Promise<ShellClient> {
  const q: Record<string, string | string[]> = { ...query };
  if (command !== undefined) q.command = command;
  return new ShellClient(shellUrl(lease, q), {
    headers: { authorization: `Bearer ${tenant.fresh(lease)}` },
  }).open();
}

async function refusal(promise: Promise<unknown>): Promise<ShellRefusal> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ShellRefusal) return err;
    throw err;
  }
  throw new Error("the session was accepted");
}

/** Shell commands still running in mock-1 (read through its signed test route). */
async function running(): Promise<number> {
  const res = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).get("/_mock/exec-sessions");
  return (res.json as { running: number }).running;
}

let lease: string;
let second: string;

describe("tenant shell sessions on real processes", () => {
  before(async () => {
    lease = await activeLease();
    second = await activeLease();
  });

  it("runs sh -c with both streams and exit code 3, and leaves nothing running", async () => {
    const s = await shell(lease, ["sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert.equal(s.ws.protocol, "v5.channel.k8s.io");
    assert.deepEqual(await s.closed, { code: 1000, reason: "exited" });
    assert.equal(s.stdout, "out\n");
    assert.equal(s.stderr, "err\n");
    assert.equal(s.exitCode, 3);
    await until(async () => (await running()) === 0, "no command left in the mock");
  });

  it("relays stdin until it is half-closed (cat), then exit 0; the token may ride in ?token=", async () => {
    const s = await new ShellClient(shellUrl(lease, { command: "cat" }, tenant.fresh(lease))).open();
    s.stdin("hello ");
    s.stdin("world\n");
    await s.waitFor(() => s.stdout === "hello world\n", "the echo");
    s.closeStdin();
    assert.equal((await s.closed).code, 1000);
    assert.equal(s.exitCode, 0);
  });

  it("an unknown command exits 127 with a message on stderr", async () => {
    const s = await shell(lease, ["frobnicate"]);
    await s.closed;
    assert.equal(s.exitCode, 127);
    assert.match(s.stderr, /frobnicate: not found/);
  });

  it("the audit: one shell_session notice on the lease's event stream", async () => {
    const events = await new WsClient(
      `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?notices=1&token=${tenant.access(lease)}`,
    ).open();
    await events.frame(1);
    const s = await shell(lease, ["echo", "audited"]);
    await s.closed;
    await until(() => events.frames.find((f) => f.type === "shell_session"), "the shell_session notice");
    const notice = events.frames.find((f) => f.type === "shell_session")!;
    assert.equal(notice.lease_uuid, lease);
    assert.deepEqual(notice.argv, ["echo", "audited"]);
    assert.equal(notice.exit_code, 0);
    assert.equal(notice.bytes_out, "audited\n".length);
    assert.equal(notice.ended, "exited");
    assert.equal(typeof notice.duration_ms, "number");
    events.ws.close();
    assert.match(stack.providerd?.logTail() ?? "", /shell session ended/);
  });

  it("an interactive TTY session runs two commands and reads back a resize", async () => {
    const s = await shell(lease, undefined, { tty: "true" });
    await s.waitFor(() => s.stdout.endsWith("$ "), "the prompt");
    s.resize(132, 43);
    s.stdin("echo first\n");
    await s.waitFor(() => s.stdout.includes("first\n"), "the first command");
    s.stdin("stty size\n");
    await s.waitFor(() => s.stdout.includes("43 132\n"), "the terminal size");
    s.stdin("exit 0\n");
    assert.equal((await s.closed).code, 1000);
    assert.equal(s.exitCode, 0);
    assert.equal(s.stderr, "", "a TTY has one output stream");
  });

  describe("refusals before the upgrade (HTTP and the error envelope)", () => {
    it("another tenant's token: 403", async () => {
      const r = await refusal(
        new ShellClient(shellUrl(lease), {
          headers: { authorization: `Bearer ${other.fresh(lease)}` },
        }).open(),
      );
      assert.equal(r.status, 403);
      assert.deepEqual(r.body, { error: "forbidden", code: 403 });
    });

    it("a replayed token: 401", async () => {
      const token = tenant.fresh(lease);
      const first = await new ShellClient(shellUrl(lease, { command: ["echo", "x"] }, token)).open();
      await first.closed;
      const r = await refusal(new ShellClient(shellUrl(lease, { command: ["echo", "x"] }, token)).open());
      assert.equal(r.status, 401);
    });

    it("a PENDING lease: 404", async () => {
      const [pending] = await stack.createLeases(1, "docker-small", sha256(Buffer.from("{}")));
      const r = await refusal(shell(pending!, ["echo"]));
      assert.equal(r.status, 404);
      assert.equal(r.body.error, "lease not found or not active");
    });

    it("a closed lease: 404", async () => {
      const closing = await activeLease();
      await stack.tenant.closeLeases([closing], "done");
      await until(async () => {
        const r = await refusal(shell(closing, ["echo"])).catch(() => undefined);
        return r?.status === 404;
      }, "the closed lease refused");
    });

    it("an unknown service and an unknown instance: 404, and bad queries 400", async () => {
      const svc = await refusal(shell(lease, ["echo"], { service: "nope" }));
      assert.equal(svc.status, 404);
      assert.equal(svc.body.error, "the lease has no such service or instance");
      const inst = await refusal(shell(lease, ["echo"], { instance: "5" }));
      assert.equal(inst.status, 404);
      assert.equal((await refusal(shell(lease, ["echo"], { instance: "-1" }))).status, 400);
      assert.equal((await refusal(shell(lease, ["echo"], { tty: "maybe" }))).status, 400);
    });

    it("a malformed lease UUID: 400; no upgrade: 400; another subprotocol: 400", async () => {
      const bad = await refusal(new ShellClient(shellUrl("not-a-uuid")).open());
      assert.equal(bad.status, 400);
      const plain = await fetch(`${stack.api}/v1/leases/${lease}/shell`, {
        headers: { authorization: `Bearer ${tenant.fresh(lease)}` },
      });
      assert.equal(plain.status, 400);
      const proto = await refusal(
        new ShellClient(shellUrl(lease, {}, tenant.fresh(lease)), {
          protocols: ["v4.channel.k8s.io"],
        }).open(),
      );
      assert.equal(proto.status, 400);
    });

    it("a backend that never answers the upgrade: 503 request timeout, and no slot is kept", async () => {
      const hung = await activeLease("docker-medium");
      // More refusals than the provider's cap (3): each one released its slot.
      for (let i = 0; i < 4; i++) {
        const r = await refusal(shell(hung, ["echo"]));
        assert.equal(r.status, 503);
        assert.equal(r.body.error, "request timeout");
      }
      const s = await shell(lease, ["echo", "still"]);
      await s.closed;
      assert.equal(s.stdout, "still\n");
    });

    it("session caps: the 3rd on a lease is 429, the 4th on the provider 503", async () => {
      const a1 = await shell(lease, ["sleep", "1000"]);
      const a2 = await shell(lease, ["sleep", "1000"]);
      const overLease = await refusal(shell(lease, ["echo"]));
      assert.equal(overLease.status, 429);
      const b1 = await shell(second, ["sleep", "1000"]);
      const overTotal = await refusal(shell(second, ["echo"]));
      assert.equal(overTotal.status, 503);
      for (const s of [a1, a2, b1]) s.ws.close();
      await Promise.all([a1.closed, a2.closed, b1.closed]);
      await until(async () => (await running()) === 0, "the sleeps killed");
      await until(
        async () =>
          (
            await shell(lease, ["echo"])
              .then((s) => s.closed)
              .catch(() => undefined)
          )?.code === 1000,
        "a slot free again",
      );
    });
  });

  describe("hostile sessions", () => {
    it("a text frame and an unknown channel close with 1008", async () => {
      const a = await shell(lease, ["cat"]);
      a.ws.send("not binary");
      assert.equal((await a.closed).code, SHELL_CLOSE.malformed);
      const b = await shell(lease, ["cat"]);
      b.send(7, "x");
      assert.equal((await b.closed).code, SHELL_CLOSE.malformed);
      const c = await shell(lease, ["cat"]);
      c.send(CHANNEL.resize, "{not json");
      assert.equal((await c.closed).code, SHELL_CLOSE.malformed);
      await until(async () => (await running()) === 0, "the cats killed");
    });

    it("a frame over 64 KiB closes with 1009", async () => {
      const s = await shell(lease, ["cat"]);
      s.stdin("x".repeat(70 * 1024));
      assert.equal((await s.closed).code, SHELL_CLOSE.tooLarge);
      await until(async () => (await running()) === 0, "the cat killed");
    });

    it("a resize storm is coalesced: the last size wins, far fewer resizes reach the command", async () => {
      const s = await shell(lease, undefined, { tty: "true" });
      await s.waitFor(() => s.stdout.endsWith("$ "), "the prompt");
      for (let i = 1; i <= 2000; i++) s.resize(80 + (i % 50), 24 + (i % 20));
      s.resize(200, 50);
      await s.ws.ping();
      // Coalescing holds the last one for at most 100 ms.
      await until(async () => {
        const before = s.stdout.length;
        s.stdin("stty size\n");
        await s.waitFor(() => s.stdout.length > before + 2 && s.stdout.endsWith("$ "), "stty");
        return s.stdout.slice(before).includes("50 200\n");
      }, "the last size applied");
      s.stdin("stty resizes\n");
      await s.waitFor(() => /\$ (\d+)\n\$ $/.test(s.stdout), "the resize count");
      const count = Number(/\$ (\d+)\n\$ $/.exec(s.stdout)?.[1]);
      assert.ok(count >= 1 && count < 200, `the command saw ${count} of 2001 resizes`);
      s.stdin("exit\n");
      assert.equal((await s.closed).code, 1000);
    });

    it("a command that never exits ends at the idle timeout (4000), and is killed", async () => {
      const s = await shell(lease, ["sleep", "1000"]);
      assert.equal((await s.closed).code, SHELL_CLOSE.idle);
      await until(async () => (await running()) === 0, "the sleep killed");
    });

    it("a busy session ends at the maximum duration (4001)", async () => {
      const s = await shell(lease, ["cat"]);
      const typing = setInterval(() => s.stdin("."), 500);
      try {
        assert.equal((await s.closed).code, SHELL_CLOSE.maxDuration);
      } finally {
        clearInterval(typing);
      }
      await until(async () => (await running()) === 0, "the cat killed");
    });

    it("a client that stops reading `yes` is cut off, providerd's memory stays bounded", async () => {
      const rss = () =>
        Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${stack.providerd!.pid}/status`, "utf8"))?.[1]);
      const before = rss();
      const s = await shell(lease, ["yes"]);
      await s.waitFor(() => s.stdout.length > 0, "some output");
      s.ws.pause();
      // A paused client reads nothing, not even the end: the command's end shows it was cut.
      await until(async () => (await running()) === 0, "yes killed", { timeoutMs: 30_000 });
      const grown = rss() - before;
      assert.ok(grown < 64 * 1024, `providerd grew by ${grown} KiB`);
      s.ws.resume();
      const closed = await s.closed;
      assert.equal(closed.code, 1006, "dropped without a closing handshake it would not read");
    });
  });
});

describe("fred lease shell", () => {
  const as = () => [
    "--from",
    "tenant1",
    "--home",
    join(stack.dir, "devnet"),
    "--rpc",
    stack.devnet.rpc,
    "--provider-url",
    stack.api,
  ];

  it("with a command: its stdout and stderr on ours, and our exit code is its own (3)", async () => {
    const r = await runFred([
      "lease",
      "shell",
      lease,
      ...as(),
      "--",
      "sh",
      "-c",
      "echo out; echo err >&2; exit 3",
    ]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, "out\n");
    assert.match(r.stderr, /^err$/m);
  });

  it("two shells opened on one lease in the same second both run (the second token is re-minted once)", async () => {
    // Started together, both processes stamp their first token with the same second: the
    // same bytes, so one of them finds it spent (401) and must open again with a new one.
    const runs = await Promise.all(
      ["one", "two"].map((word) => runFred(["lease", "shell", lease, ...as(), "--", "echo", word])),
    );
    assert.deepEqual(
      runs.map((r) => [r.code, r.stdout]),
      [
        [0, "one\n"],
        [0, "two\n"],
      ],
      runs.map((r) => r.stderr).join("\n"),
    );
  });

  it("a refusal prints the API's message and exits 1", async () => {
    const r = await runFred(["lease", "shell", lease, "--service", "nope", ...as(), "--", "echo"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /404 the lease has no such service or instance/);
  });

  it("without a command: an interactive terminal under a pseudo-terminal runs two commands and a resize", async () => {
    const ttyFile = join(stack.dir, "shell-tty");
    const cli = [process.execPath, FRED_BIN, "lease", "shell", lease, ...as()].map((a) => `'${a}'`).join(" ");
    // script(1) gives the CLI a real terminal; the command first says which one, so the
    // test can resize it from outside (the kernel then signals SIGWINCH, as a window does).
    const child = spawn(
      "script",
      ["-qfc", `tty > ${ttyFile}; stty cols 100 rows 30; exec ${cli}`, "/dev/null"],
      {
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await until(() => out.includes("$ "), "the remote prompt", { timeoutMs: 60_000, context: () => out });
      child.stdin.write("stty size\r");
      await until(() => out.includes("30 100"), "the starting size", { context: () => out });
      child.stdin.write("echo one\r");
      await until(() => /one\r?\n/.test(out), "the first command", { context: () => out });
      const tty = readFileSync(ttyFile, "utf8").trim();
      spawnSync("stty", ["-F", tty, "cols", "120", "rows", "40"]);
      await until(
        async () => {
          child.stdin.write("stty size\r");
          await new Promise((r) => setTimeout(r, 200));
          return out.includes("40 120");
        },
        "the resize",
        { context: () => out },
      );
      // Ctrl-D ends the session; the CLI restores the terminal and exits 0.
      child.stdin.write("\x04");
      assert.equal(await exited, 0, out);
    } finally {
      child.kill();
    }
  });
});
