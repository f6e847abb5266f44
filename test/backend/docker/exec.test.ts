import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import type { ExecSession, SkuProfile, WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerCli, dockerSkip, engineIdShift } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * Shell sessions through the real engine's exec API: streams and exit code, the
 * container's own user, a TTY's resize, stdin half-close, and no exec process left in the
 * container once a session is killed (`sleep 1000` ignores its stdin, so only the kill
 * ends it). `fred-test/owned:1` idles forever as 1000:1000.
 */
const skip = await dockerSkip({ images: ["owned"] });

describe("docker substrate: exec", { skip }, () => {
  const storageId = randomUUID();
  const config = substrateConfig(undefined, { volume_filesystem: "none" });
  const signal = new AbortController().signal;
  const profile: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 0 };
  let substrate: DockerSubstrate;
  let spec: WorkloadSpec;
  let container: string;

  before(async () => {
    substrate = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-docker", "silent"),
      volumes: undefined,
      ids: await engineIdShift(),
    });
    spec = workloadSpec({ storageId, services: { app: { image: "fred-test/owned:1" } }, profile });
    await substrate.validate(spec);
    await substrate.create(spec, signal);
    await substrate.start(spec, signal);
    container = instanceName(spec.leaseUuid, "app", 0);
  });

  after(async () => {
    await substrate?.destroyLease(spec.leaseUuid, signal).catch(() => {});
    await substrate?.close();
  });

  async function collect(s: ExecSession): Promise<{ out: string; err: string; code: number }> {
    let out = "";
    let err = "";
    s.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    s.stderr?.on("data", (c: Buffer) => {
      err += c.toString();
    });
    const code = await s.exit;
    return { out, err, code };
  }

  const top = async () => (await dockerCli(["top", container])).out;

  it("runs sh -c with both streams and exit code 3, as the container's user", async () => {
    const s = await substrate.exec(
      spec.leaseUuid,
      {
        service: "app",
        instance: 0,
        tty: false,
        argv: ["sh", "-c", "echo out; echo err >&2; id -u; exit 3"],
      },
      signal,
    );
    s.stdin.end();
    assert.deepEqual(await collect(s), { out: "out\n1000\n", err: "err\n", code: 3 });
    await s.kill();
  });

  it("stdin half-close ends cat", async () => {
    const s = await substrate.exec(
      spec.leaseUuid,
      { service: "app", instance: 0, tty: false, argv: ["cat"] },
      signal,
    );
    const result = collect(s);
    s.stdin.write("hello\n");
    s.stdin.end();
    assert.deepEqual(await result, { out: "hello\n", err: "", code: 0 });
    await s.kill();
  });

  it("a TTY takes a resize", async () => {
    const s = await substrate.exec(
      spec.leaseUuid,
      { service: "app", instance: 0, tty: true, argv: ["sh"] },
      signal,
    );
    assert.equal(s.stderr, undefined);
    let out = "";
    s.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    s.resize({ width: 123, height: 45 });
    await until(async () => {
      s.stdin.write("stty size\n");
      await new Promise((r) => setTimeout(r, 100));
      return out.includes("45 123");
    }, "the terminal size inside");
    s.stdin.write("exit 0\n");
    assert.equal(await s.exit, 0);
    await s.kill();
  });

  it("an unknown service or instance is refused", async () => {
    await assert.rejects(
      substrate.exec(spec.leaseUuid, { service: "app", instance: 4, tty: false, argv: ["true"] }, signal),
      { name: "ExecTargetMissing" },
    );
  });

  it("kill leaves no exec process in the container (sleep 1000 ignores its stdin)", async () => {
    const s = await substrate.exec(
      spec.leaseUuid,
      { service: "app", instance: 0, tty: false, argv: ["sh", "-c", "sleep 1000 & sleep 1001"] },
      signal,
    );
    await until(async () => (await top()).includes("sleep 1001"), "the sleeps run");
    await s.kill();
    await until(async () => !/sleep 100[01]/.test(await top()), "no sleep left in docker top", {
      context: () => "",
    });
    assert.equal(await s.exit, 137);
  });
});
