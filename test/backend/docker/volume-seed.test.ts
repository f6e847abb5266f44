import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName, volumeDirName } from "../../../src/backend/docker/names.ts";
import { IdShift } from "../../../src/backend/docker/userns.ts";
import { extractArchive, type SeedLimits } from "../../../src/backend/docker/volume-seed.ts";
import type { WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerCli, dockerSkip, engineIdShift, execIn, scratchVolumeRoot } from "../../support/docker.ts";
import { seedHelpersLeft, substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * Seeding durable volumes from the image: the extraction guard on hand-made archives
 * (escapes, caps), then the real engine with `fred-test/seeded:1` (content, ownership,
 * modes, no re-seed over tenant data, restart after an interrupted seed, caps as definite
 * failures, no helper container left behind).
 */

type Member = {
  name: string;
  type: "0" | "2" | "5";
  data?: string;
  link?: string;
  mode?: number;
  uid?: number;
  gid?: number;
};

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\u0000`;
}

/** A ustar archive, byte for byte, so the tests can build archives no file system holds. */
function tarOf(members: Member[]): Buffer {
  const parts: Buffer[] = [];
  for (const m of members) {
    const data = Buffer.from(m.data ?? "");
    const h = Buffer.alloc(512);
    h.write(m.name, 0, 100, "utf8");
    h.write(octal(m.mode ?? (m.type === "5" ? 0o755 : 0o644), 8), 100, "latin1");
    h.write(octal(m.uid ?? 0, 8), 108, "latin1");
    h.write(octal(m.gid ?? 0, 8), 116, "latin1");
    h.write(octal(data.length, 12), 124, "latin1");
    h.write(octal(0, 12), 136, "latin1");
    h.write("        ", 148, "latin1");
    h.write(m.type, 156, "latin1");
    h.write(m.link ?? "", 157, 100, "utf8");
    h.write("ustar\u000000", 257, "latin1");
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, "latin1");
    parts.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

const roomy: SeedLimits = { maxBytes: 1 << 20, maxEntries: 100 };
const neverAborted = new AbortController().signal;

function reasonOf(err: unknown): string | undefined {
  return (err as { reason?: string; outcome?: string }).outcome === "definite"
    ? (err as { reason?: string }).reason
    : `not definite: ${(err as Error).message}`;
}

describe("volume seed extraction guard", { skip: process.getuid?.() === 0 ? false : "needs root" }, () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), "fred-seed-"));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("unpacks a plain archive and reports the top directory's mode", async () => {
    const into = fresh();
    const top = await extractArchive(
      Readable.from([
        tarOf([
          { name: "data/", type: "5", mode: 0o750 },
          { name: "data/a.txt", type: "0", data: "alpha" },
        ]),
      ]),
      into,
      roomy,
      IdShift.none,
      neverAborted,
    );
    assert.deepEqual(top, { mode: 0o750, uid: 0, gid: 0 });
    assert.deepEqual(readdirSync(into), ["a.txt"]);
  });

  for (const [what, link] of [
    ["an absolute symlink", "OUTSIDE"],
    ["a symlink climbing out with ..", "../../../../../../../../OUTSIDE"],
  ] as const) {
    it(`a member written through ${what} never lands outside the directory`, async () => {
      const outside = fresh();
      const into = fresh();
      const archive = tarOf([
        { name: "data/", type: "5" },
        {
          name: "data/evil",
          type: "2",
          link: link.replace("OUTSIDE", outside.slice(1)).replace(/^(?!\.)/, "/"),
        },
        { name: "data/evil/pwned", type: "0", data: "escaped" },
      ]);
      const outcome = await extractArchive(
        Readable.from([archive]),
        into,
        roomy,
        IdShift.none,
        neverAborted,
      ).then(
        () => "extracted",
        (err) => reasonOf(err),
      );
      assert.equal(existsSync(join(outside, "pwned")), false, "nothing was written outside");
      assert.equal(outcome, "VolumeSeedFailed");
    });
  }

  for (const [what, name] of [
    ["a .. component", "data/../../escape"],
    ["an absolute name", "/etc/escape"],
  ] as const) {
    it(`refuses a member with ${what}`, async () => {
      const into = fresh();
      const archive = tarOf([
        { name: "data/", type: "5" },
        { name, type: "0", data: "x" },
      ]);
      await assert.rejects(
        extractArchive(Readable.from([archive]), into, roomy, IdShift.none, neverAborted),
        (err) => {
          assert.equal(reasonOf(err), "VolumeSeedFailed");
          return true;
        },
      );
    });
  }

  it("under userns-remap, the archive's host owners land as they are; the top reports the container's ids", async () => {
    const shift = new IdShift({
      uids: [{ container: 0, host: 100_000, size: 65_536 }],
      gids: [{ container: 0, host: 200_000, size: 65_536 }],
    });
    const into = fresh();
    const top = await extractArchive(
      Readable.from([
        tarOf([
          { name: "data/", type: "5", mode: 0o770, uid: 101_000, gid: 201_000 },
          { name: "data/root.txt", type: "0", data: "r", uid: 100_000, gid: 200_000 },
          { name: "data/app.txt", type: "0", data: "a", uid: 101_000, gid: 201_001 },
        ]),
      ]),
      into,
      roomy,
      shift,
      neverAborted,
    );
    assert.deepEqual(top, { mode: 0o770, uid: 1000, gid: 1000 }, "the image's own view decides the run user");
    const owner = (f: string) => {
      const st = statSync(join(into, f));
      return `${st.uid}:${st.gid}`;
    };
    assert.equal(owner("root.txt"), "100000:200000");
    assert.equal(owner("app.txt"), "101000:201001");
    // A real host user's id (here root) is no id of the remapped image store: refused.
    const hostRoot = tarOf([
      { name: "data/", type: "5", uid: 100_000, gid: 200_000 },
      { name: "data/planted", type: "0", data: "x", uid: 0, gid: 0 },
    ]);
    await assert.rejects(
      extractArchive(Readable.from([hostRoot]), fresh(), roomy, shift, neverAborted),
      (err) => {
        assert.equal(reasonOf(err), "VolumeSeedFailed", "an owner outside the map refuses the seed");
        return true;
      },
    );
  });

  it("stops at the entry cap and at the byte cap with VolumeSeedTooLarge", async () => {
    const many = tarOf([
      { name: "data/", type: "5" },
      ...Array.from({ length: 5 }, (_, i) => ({ name: `data/f${i}`, type: "0" as const, data: "1234" })),
    ]);
    for (const limits of [
      { maxBytes: 1 << 20, maxEntries: 4 },
      { maxBytes: 15, maxEntries: 100 },
    ]) {
      await assert.rejects(
        extractArchive(Readable.from([many]), fresh(), limits, IdShift.none, neverAborted),
        (err) => {
          assert.equal(reasonOf(err), "VolumeSeedTooLarge");
          return true;
        },
      );
    }
    // Exactly at the caps is fine.
    await extractArchive(
      Readable.from([many]),
      fresh(),
      { maxBytes: 20, maxEntries: 6 },
      IdShift.none,
      neverAborted,
    );
  });
});

const skip = await dockerSkip({ btrfs: true, images: ["seeded", "volume"] });

describe("docker substrate: volumes seeded from the image", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("seed");
  const config = substrateConfig(scratch?.path);
  const signal = new AbortController().signal;
  const profile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const seeded = { image: "fred-test/seeded:1" };
  const made: WorkloadSpec[] = [];
  let substrate: DockerSubstrate;
  let spec: WorkloadSpec;
  /** The engine's id map: what the seeded files' host owners are shifted by. */
  let ids = IdShift.none;

  const substrateWith = (seedLimits?: Partial<SeedLimits>) =>
    new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-docker", "silent"),
      volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
      ids,
      ...(seedLimits ? { seedLimits } : {}),
    });

  async function run(s: WorkloadSpec, on = substrate): Promise<void> {
    made.push(s);
    await on.validate(s);
    await on.create(s, signal);
    await on.start(s, signal);
  }

  const container = (s: WorkloadSpec) => instanceName(s.leaseUuid, "db", 0);
  /** `sh -c` as uid 1000: root without capabilities may not enter the image's 0770 /data. */
  const execAsApp = (s: WorkloadSpec, script: string) =>
    dockerCli(["exec", "-u", "1000", container(s), "sh", "-c", script]);
  const helpersLeft = () => seedHelpersLeft(storageId);

  before(async () => {
    await assertBtrfsWithQuotas(config.volumeDataPath);
    ids = await engineIdShift();
    substrate = substrateWith();
    spec = workloadSpec({ storageId, services: { db: seeded }, profile });
    await run(spec);
  });

  after(async () => {
    for (const s of made) await substrate?.destroyLease(s.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
  });

  it("the container sees the image's files with their owners, modes and links", async () => {
    const ls = await execAsApp(spec, "ls -ln /data /data/nested/deeper");
    assert.equal(ls.code, 0, ls.out);
    assert.match(ls.out, /-rw-r--r--\s+1 0\s+0\s+13 .* hello\.txt/);
    assert.match(ls.out, /-rw-r-----\s+1 1000\s+1000\s+11 .* secret\.txt/);
    assert.match(ls.out, /link -> hello\.txt/);
    assert.match(ls.out, /abs -> \/etc\/passwd/);
    assert.match(ls.out, /note\.txt/);
    const read = await execAsApp(
      spec,
      "cat /data/hello.txt /data/link /data/nested/deeper/note.txt; stat -c '%u:%g %a' /data",
    );
    assert.equal(read.out, "seeded-hello\nseeded-hello\ndeep-note\n1000:1000 770\n");
    assert.equal(await helpersLeft(), "", "the helper container is gone");
  });

  it("a numeric user owns the volume directory; seeded files keep the image's owners", async () => {
    const s = workloadSpec({ storageId, services: { db: { ...seeded, user: "2000:2000" } }, profile });
    await run(s);
    const r = await execIn(container(s), "stat -c '%u:%g %a' /data /data/secret.txt /data/hello.txt");
    assert.equal(r.out, "2000:2000 770\n1000:1000 640\n0:0 644\n");
  });

  it("an image path that is empty in the image stays owned by the numeric user", async () => {
    const s = workloadSpec({
      storageId,
      services: { db: { image: "fred-test/volume:1", user: "1000" } },
      profile,
    });
    await run(s);
    const r = await execIn(container(s), "stat -c '%u:%g' /data; ls -A /data | wc -l");
    assert.equal(r.out.replace(/ +/g, ""), "1000:1000\n0\n");
  });

  it("never seeds over a volume that finished seeding: tenant files stay, deleted ones stay deleted", async () => {
    const s = workloadSpec({ storageId, services: { db: { ...seeded, user: "1000" } }, profile });
    await run(s);
    const w = await execIn(
      container(s),
      "echo tenant-data > /data/tenant.txt && rm /data/hello.txt && echo ok",
    );
    assert.equal(w.out.trim(), "ok");
    // The container goes away (a crash, a removal) while the volume stays; create runs again.
    assert.equal((await dockerCli(["rm", "-f", container(s)])).code, 0);
    await substrate.create(s, signal);
    await substrate.start(s, signal);
    const r = await execIn(container(s), "cat /data/tenant.txt; ls /data");
    assert.match(r.out, /^tenant-data\n/);
    assert.doesNotMatch(r.out, /hello\.txt/);
    assert.match(r.out, /secret\.txt/);
  });

  it("a seed interrupted before it finished is emptied and done again", async () => {
    const s = workloadSpec({ storageId, services: { db: { ...seeded, user: "1000" } }, profile });
    const name = instanceName(s.leaseUuid, "db", 0);
    const dir = volumeDirName("/data");
    const volumes = new BtrfsVolumes(config.volumeDataPath, storageId, ids);
    // A first attempt made the volume and wrote part of the content, then died.
    const dirs = await volumes.ensure(name, { storageId, leaseUuid: s.leaseUuid }, 16, [dir], undefined);
    writeFileSync(join(dirs.get(dir) as string, "half-written.bin"), "partial");
    assert.equal(await volumes.needsSeed(name, dir), true);
    await run(s);
    const r = await execIn(container(s), "ls -A /data | sort | tr '\\n' ' '");
    assert.equal(r.out.trim(), "abs hello.txt link nested secret.txt");
    assert.equal(await volumes.needsSeed(name, dir), false);
  });

  for (const [cap, limits] of [
    ["entry", { maxEntries: 3 }],
    ["byte", { maxBytes: 20 }],
  ] as const) {
    it(`the ${cap} cap makes the provision fail definitely with VolumeSeedTooLarge`, async () => {
      const capped = substrateWith(limits);
      try {
        const s = workloadSpec({ storageId, services: { db: seeded }, profile });
        made.push(s);
        await capped.validate(s);
        await assert.rejects(capped.create(s, signal), (err) => {
          assert.equal(reasonOf(err), "VolumeSeedTooLarge");
          assert.doesNotMatch((err as { tenantMessage: string }).tenantMessage, /\/|fred-/);
          return true;
        });
        assert.equal(await helpersLeft(), "", "the helper container is gone after a refusal");
        assert.equal((await dockerCli(["inspect", container(s)])).code, 1, "no instance container");
      } finally {
        await capped.close();
      }
    });
  }
});
